import t from 'tap'
import { encodeFunctionData, erc20Abi, getAddress, parseAbi, toFunctionSelector, zeroAddress, zeroHash, type Address, type Hex } from 'viem'
import type { RelayContext } from '../../core/relay/context.ts'
import { paymentToken } from '../../core/relay/paymentToken.ts'
import { readBatch, relayOfRequest } from '../../core/relay/relayOfRequest.ts'
import { yParityOf } from '../../core/relay/schemas.ts'
import type { PaymentServices } from '../../core/services.ts'
import { ToolError } from '../../core/tool.ts'
import { wrapCaliburSignature } from '../../plugins/calibur/executeCalldata.ts'
import { caliburBatchReader, paymentFirstBatch } from '../../plugins/calibur/paymentFirstBatch.ts'
import { fakeClient, fakeNetwork, networkConfig } from './fakeChain.ts'

// A submit request as the Runner will run it (core/relay/relayOfRequest.ts): a signed transfer, or
// a Calibur batch read by the calibur group's own reader; each refusal with its words.

const config = networkConfig()
const network = fakeNetwork(fakeClient({}).client, config)
const payments: PaymentServices = { token: (_chain, token) => paymentToken(network, token), pricer: () => Promise.reject(new Error('no pricing here')) }
const context = { network, batchReaders: [caliburBatchReader(payments)] } as unknown as RelayContext
const noReaders = { network, batchReaders: [] } as unknown as RelayContext
const usdc = paymentToken(network, 'USDC')
const weth = paymentToken(network, 'WETH')
const payee = getAddress(config.payee)
const runner = getAddress(config.runner.contract)
const account = getAddress('0x70997970C51812dc3A010C7d01b50e0d17dc79C8')
const target = getAddress('0x1111111111111111111111111111111111111111')
const call = { to: target.toLowerCase(), data: '0xabcd', value: '0' }
const nonce = `0x${'AB'.repeat(32)}`

const authorization = (overrides: Record<string, string> = {}) => ({
  token: usdc.address.toLowerCase(),
  authorization: { from: account.toLowerCase(), to: payee, value: '150000', validAfter: '0', validBefore: '1900000000', nonce, ...overrides },
  signature: `0x${'11'.repeat(65)}`,
})

t.test('a signed transfer: to the payee, its amount, deadline, identity and payer', async (t) => {
  const payment = authorization()
  const requested = relayOfRequest(context, call as never, payment as never, usdc)
  t.strictSame(requested, {
    relay: { form: 'authorization', call: { to: target, data: '0xabcd' }, payment, payee },
    amount: 150_000n,
    paymentDeadline: 1_900_000_000n,
    identity: `3009:local:${usdc.address}:${account}:0x${'ab'.repeat(32)}`,
    payer: account,
  })
  t.throws(
    () => relayOfRequest(context, call as never, authorization({ to: target }) as never, usdc),
    new ToolError(`the signed transfer pays ${target}, not the payee ${payee}: sign a transfer to the payee (payment_authorization prepares it)`),
  )
})

const caliburExecute = parseAbi([
  'struct Call { address to; uint256 value; bytes data; }',
  'struct BatchedCall { Call[] calls; bool revertOnFailure; }',
  'struct SignedBatchedCall { BatchedCall batchedCall; uint256 nonce; bytes32 keyHash; address executor; uint256 deadline; }',
  'function execute(SignedBatchedCall signedBatchedCall, bytes wrappedSignature)',
])
const signedBatch = (token: Address, amount: bigint, to: Address = payee) => {
  const leg = { to: token, value: '0', data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to, amount] }) }
  const guard = { to: runner, value: '0', data: toFunctionSelector('paymentGuard()') }
  const batch = paymentFirstBatch(leg, guard, [{ to: target, value: '0', data: '0xabcd' }])
  return encodeFunctionData({
    abi: caliburExecute,
    functionName: 'execute',
    args: [
      { batchedCall: { calls: batch.calls.map((item) => ({ to: item.to, value: BigInt(item.value), data: item.data })), revertOnFailure: false }, nonce: 9n, keyHash: zeroHash, executor: zeroAddress, deadline: 1_800_000_000n },
      wrapCaliburSignature(`0x${'22'.repeat(65)}`),
    ],
  })
}

t.test('a Calibur batch: read by its reader, the payment no more than the leg pays', async (t) => {
  const data = signedBatch(usdc.address, 150_000n)
  const batchCall = { to: account, data, value: '0' }
  const requested = relayOfRequest(context, batchCall as never, { token: usdc.address, amountBaseUnits: '150000' } as never, usdc)
  t.equal(requested.amount, 150_000n)
  t.equal(requested.paymentDeadline, 1_800_000_000n)
  t.equal(requested.identity, `calibur:local:${account}:9`)
  t.equal(requested.payer, account)
  t.strictSame(requested.relay, { form: 'batch', account, delegate: getAddress(config.calibur), data, token: usdc.address, payee, amount: 150_000n })
  t.equal(requested.batch?.account, account)
  // a payment saying less than the leg pays is fine (the leg is what is paid); more is refused
  t.equal(relayOfRequest(context, batchCall as never, { token: usdc.address, amountBaseUnits: '149999' } as never, usdc).amount, 150_000n)
  t.throws(
    () => relayOfRequest(context, batchCall as never, { token: usdc.address, amountBaseUnits: '150001' } as never, usdc),
    new ToolError("the payment says 150001 base units but the batch's payment leg pays 150000: pass the payment calibur_execute returned"),
  )
})

t.test('readBatch: the batch must match the payment, the payee and the account', async (t) => {
  const batchCall = (data: Hex, to: Address = account) => ({ to, data, value: '0' }) as never
  t.equal(readBatch(context, batchCall(signedBatch(usdc.address, 5n)), usdc).amount, 5n)
  t.throws(
    () => readBatch(context, batchCall(signedBatch(usdc.address, 5n)), weth),
    new ToolError(`the Calibur batch pays in ${usdc.address}, not in ${weth.address} as the payment says: pass the payment calibur_execute returned`),
  )
  // a reader that says the batch pays someone else (the calibur reader refuses that itself, so a reader of the test's)
  const elsewhere = getAddress('0x5555555555555555555555555555555555555555')
  const loose = {
    network,
    batchReaders: [
      {
        delegate: 'Loose',
        errors: { abi: [], describe: () => undefined },
        read: () => ({ account, delegate: account, token: usdc.address, payee: elsewhere, amount: 1n, deadline: 0n, identity: 'x', ownCalls: { from: account, to: account, data: '0x' as Hex } }),
      },
    ],
  } as unknown as RelayContext
  t.throws(() => readBatch(loose, batchCall('0x'), usdc), new ToolError(`the Loose batch pays ${elsewhere}, not the payee ${payee}`))
  const otherAccount = { network, batchReaders: [{ ...(loose.batchReaders[0] as object), read: () => ({ ...loose.batchReaders[0]!.read(network, {} as never)!, payee, account: elsewhere }) }] } as unknown as RelayContext
  t.throws(() => readBatch(otherAccount, batchCall('0x'), usdc), new ToolError(`the Loose batch is signed by ${elsewhere}, but the call goes to ${account}`))
  // no reader recognises the call
  const refusal =
    'refused: a call that pays somewhere inside is not accepted, since it cannot be made safe. Pay one of two ways: ' +
    '{token, authorization, signature}, a signed EIP-3009 transfer to the payee (payment_authorization prepares it), '
  t.throws(() => readBatch(context, batchCall('0x1234'), usdc), new ToolError(`${refusal}or a Calibur batch whose first call pays (calibur_batch prepares it; calibur_execute returns the call and payment to submit)`))
  t.throws(() => readBatch(noReaders, batchCall('0x1234'), usdc), new ToolError(`${refusal}or a delegate batch (no delegate group is enabled on this server)`))
  const twoReaders = { network, batchReaders: [...(context.batchReaders as never[]), { ...(context.batchReaders[0] as object), delegate: 'Other', read: () => undefined }] } as unknown as RelayContext
  t.throws(() => readBatch(twoReaders, batchCall('0x1234'), usdc), new ToolError(`${refusal}or a Calibur or Other batch whose first call pays (calibur_batch prepares it; calibur_execute returns the call and payment to submit)`))
  // the first reader that recognises it answers; the others are passed over until then
  const passing = { network, batchReaders: [{ ...(context.batchReaders[0] as object), delegate: 'Other', read: () => undefined }, ...(context.batchReaders as never[])] } as unknown as RelayContext
  t.equal(readBatch(passing, batchCall(signedBatch(usdc.address, 6n)), usdc).amount, 6n)
})

t.test('yParityOf: yParity, else v (27/28 or 0/1, number or string)', async (t) => {
  const base = { chainId: 1, address: account, nonce: 0, r: zeroHash, s: zeroHash }
  t.equal(yParityOf({ ...base, yParity: 1 } as never), 1)
  t.equal(yParityOf({ ...base, yParity: 0, v: 27 } as never), 0)
  t.equal(yParityOf({ ...base, v: 28 } as never), 1)
  t.equal(yParityOf({ ...base, v: '28' } as never), 1)
  t.equal(yParityOf({ ...base, v: '0x1c' } as never), 1)
  t.equal(yParityOf({ ...base, v: 1 } as never), 1)
  t.equal(yParityOf({ ...base, v: 27 } as never), 0)
  t.equal(yParityOf({ ...base, v: 0 } as never), 0)
  t.equal(yParityOf({ ...base, yParity: undefined, v: 28 } as never), 1)
})
