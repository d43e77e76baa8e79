import t from 'tap'
import { encodeFunctionData, erc20Abi, getAddress, parseAbi, zeroHash, type Address, type Hex } from 'viem'
import type { RelayContext } from '../../core/relay/context.ts'
import { paymentToken } from '../../core/relay/paymentToken.ts'
import { readBatch, relayOfRequest } from '../../core/relay/relayOfRequest.ts'
import { yParityOf } from '../../core/relay/schemas.ts'
import type { PaymentServices } from '../../core/services.ts'
import { ToolError } from '../../core/tool/tool.ts'
import { encodeOwnerExecute, wrapCaliburSignature } from '../../plugins/calibur/executeCalldata.ts'
import { CALIBUR_PAYMENT_GAS, caliburDelegate, ownCallsBatch, paymentBatch } from '../../plugins/calibur/paymentFirstBatch.ts'
import type { CaliburBatch } from '../../plugins/calibur/typedData.ts'
import { fakeClient, fakeNetwork, networkConfig } from './fakeChain.ts'
import { CALIBUR_ADDRESS } from '../../plugins/calibur/networkOptions.ts'

// A submit request as the Runner will run it (core/relay/relayOfRequest.ts): a signed transfer, or
// Calibur's two batches (payment only, then the account's calls) read by the calibur group's own
// reader; each refusal with its words.

const config = networkConfig()
const network = fakeNetwork(fakeClient({}).client, config)
const payments: Pick<PaymentServices, 'token'> = { token: (_chain, token) => paymentToken(network, token) }
const context = { network, delegates: [caliburDelegate(payments, () => CALIBUR_ADDRESS)] } as unknown as RelayContext
const noReaders = { network, delegates: [] } as unknown as RelayContext
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
  signature: `0x${'11'.repeat(64)}1b`,
})

t.test('a signed transfer: to the payee, its amount, deadline, identity and payer', async (t) => {
  const payment = authorization()
  const requested = relayOfRequest(context, call as never, payment as never, usdc)
  t.strictSame(requested, {
    relay: { form: 'authorization', call: { to: target, data: '0xabcd' }, payment, payee },
    amount: 150_000n,
    paymentDeadline: 1_900_000_000n,
    callDeadline: 0n,
    identity: `3009:local:${usdc.address}:${account}:0x${'ab'.repeat(32)}`,
    payer: account,
  })
  t.throws(
    () => relayOfRequest(context, call as never, authorization({ to: target }) as never, usdc),
    new ToolError(`the signed transfer pays ${target}, not the payee ${payee}: sign a transfer to the payee (payment_authorization prepares it)`),
  )
})

t.test('a call that is a signed EIP-3009 transfer on a configured token: its validBefore is the call\'s deadline, whatever its form (issue 43, point 9)', async (t) => {
  const signedTransfers = parseAbi([
    'function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, uint8 v, bytes32 r, bytes32 s)',
    'function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)',
    'function receiveWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, uint8 v, bytes32 r, bytes32 s)',
    'function receiveWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)',
  ])
  const fields = [account, target, 1_000_000n, 0n, 1_800_000_123n, zeroHash] as const
  const forms = signedTransfers.map((item) =>
    encodeFunctionData({ abi: [item], args: item.inputs.length === 9 ? [...fields, 27, zeroHash, zeroHash] : [...fields, `0x${'22'.repeat(65)}`] } as never),
  )
  for (const [index, data] of forms.entries()) {
    const onToken = relayOfRequest(context, { to: usdc.address.toLowerCase(), data } as never, authorization() as never, usdc)
    t.equal(onToken.callDeadline, 1_800_000_123n, `form ${index}: its validBefore`)
    const elsewhere = relayOfRequest(context, { to: target, data } as never, authorization() as never, usdc)
    t.equal(elsewhere.callDeadline, 0n, `form ${index} on a contract that is no configured token: none`)
  }
  const cut = relayOfRequest(context, { to: usdc.address, data: forms[0]!.slice(0, 74) } as never, authorization() as never, usdc)
  t.equal(cut.callDeadline, 0n, 'calldata that does not decode: none (the token reverts it)')
  const transfer = relayOfRequest(context, { to: usdc.address, data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [target, 1n] }) } as never, authorization() as never, usdc)
  t.equal(transfer.callDeadline, 0n, 'another function: none')
})

const caliburExecute = parseAbi([
  'struct Call { address to; uint256 value; bytes data; }',
  'struct BatchedCall { Call[] calls; bool revertOnFailure; }',
  'struct SignedBatchedCall { BatchedCall batchedCall; uint256 nonce; bytes32 keyHash; address executor; uint256 deadline; }',
  'function execute(SignedBatchedCall signedBatchedCall, bytes wrappedSignature)',
])
const signed = (batch: CaliburBatch, nonce: bigint, deadline = 1_800_000_000n) =>
  encodeFunctionData({
    abi: caliburExecute,
    functionName: 'execute',
    args: [
      { batchedCall: { calls: batch.calls.map((item) => ({ to: item.to, value: BigInt(item.value), data: item.data })), revertOnFailure: batch.revertOnFailure }, nonce, keyHash: zeroHash, executor: runner, deadline },
      wrapCaliburSignature(`0x${'22'.repeat(65)}`),
    ],
  })
const ownCall = { to: target, value: '0', data: '0xabcd' as Hex }
// The signed payment-only batch, at nonce 9 (key 0, seq 9)
const signedPayment = (token: Address, amount: bigint, to: Address = payee) =>
  signed(paymentBatch({ to: token, value: '0', data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to, amount] }) }), 9n)
// The signed batch of the account's calls, at the next nonce
const signedCalls = signed(ownCallsBatch([ownCall]), 10n, 1_700_000_000n)

t.test('Calibur batches: read by their reader, the payment no more than the payment batch pays', async (t) => {
  const paymentData = signedPayment(usdc.address, 150_000n)
  const batchCall = { to: account, data: signedCalls, value: '0' }
  const payment = (amountBaseUnits: string, batch: string | null = paymentData) => ({ token: usdc.address, amountBaseUnits, ...(batch === null ? {} : { batch }) }) as never
  const requested = relayOfRequest(context, batchCall as never, payment('150000'), usdc)
  t.equal(requested.amount, 150_000n)
  t.equal(requested.paymentDeadline, 1_700_000_000n, 'the earlier of the two deadlines')
  t.equal(requested.identity, `calibur:local:${account}:9`, 'the payment batch\'s nonce')
  t.equal(requested.payer, account)
  t.strictSame(requested.relay, {
    form: 'batch',
    account,
    delegate: getAddress(CALIBUR_ADDRESS),
    target: account,
    paymentData,
    paymentGas: CALIBUR_PAYMENT_GAS,
    data: signedCalls,
    token: usdc.address,
    payee,
    amount: 150_000n,
  })
  t.equal(requested.batch?.account, account)
  const paymentLeg = { to: usdc.address, value: '0', data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [payee, 150_000n] }) }
  t.equal(requested.batch?.ownCalls.data, encodeOwnerExecute({ calls: [paymentLeg, ownCall], revertOnFailure: true }), 'the calls replayed after the payment, as they ran, without any guard')
  // a payment saying less than the payment batch pays is fine (the batch is what is paid); more is refused
  t.equal(relayOfRequest(context, batchCall as never, payment('149999'), usdc).amount, 150_000n)
  t.throws(
    () => relayOfRequest(context, batchCall as never, payment('150001'), usdc),
    new ToolError('the payment says 150001 base units but its payment batch pays 150000: pass the payment calibur_execute returned'),
  )
  // a payment without its batch is refused by the reader
  t.throws(
    () => relayOfRequest(context, batchCall as never, payment('150000', null), usdc),
    new ToolError("the payment has no `batch`: a Calibur call is paid by a signed payment-only batch, calibur_execute's payment.batch: pass the payment it returned"),
  )
  // the payment batch of another nonce: the calls would not follow it
  t.throws(
    () => relayOfRequest(context, batchCall as never, payment('150000', signed(paymentBatch({ to: usdc.address, value: '0', data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [payee, 150_000n] }) }), 10n)), usdc),
    new ToolError("the batch of the account's calls has nonce key 0 seq 10; it must be signed at key 0, seq 11, right after the payment batch's, so that it runs only after the payment: build both with calibur_batch"),
  )
})

t.test('readBatch: the batches must match the payment, the payee and the account', async (t) => {
  const batchCall = (data: Hex, to: Address = account) => ({ to, data, value: '0' }) as never
  const paid = readBatch(context, batchCall(signedCalls), signedPayment(usdc.address, 5n), usdc)
  t.equal(paid.amount, 5n)
  t.equal(paid.paymentData, signedPayment(usdc.address, 5n))
  t.equal(paid.paymentGas, CALIBUR_PAYMENT_GAS)
  t.equal(paid.data, signedCalls)
  t.throws(
    () => readBatch(context, batchCall(signedCalls), signedPayment(usdc.address, 5n), weth),
    new ToolError(`the Calibur batch pays in ${usdc.address}, not in ${weth.address} as the payment says: pass the payment calibur_execute returned`),
  )
  t.throws(
    () => readBatch(context, batchCall(signedCalls), undefined, usdc),
    new ToolError("the payment has no `batch`: a Calibur call is paid by a signed payment-only batch, calibur_execute's payment.batch: pass the payment it returned"),
  )
  // a reader that says the batch pays someone else (the calibur reader refuses that itself, so a reader of the test's)
  const elsewhere = getAddress('0x5555555555555555555555555555555555555555')
  const given: (Hex | undefined)[] = []
  const loose = {
    network,
    delegates: [
      {
        name: 'Loose',
        errors: { abi: [], describe: () => undefined },
        read: (_network: unknown, _call: unknown, paymentBatch: Hex | undefined) => {
          given.push(paymentBatch)
          return { account, delegate: account, target: account, paymentData: '0x01' as Hex, paymentGas: 1n, token: usdc.address, payee: elsewhere, amount: 1n, deadline: 0n, identity: 'x', ownCalls: { from: account, to: account, data: '0x' as Hex } }
        },
      },
    ],
  } as unknown as RelayContext
  t.throws(() => readBatch(loose, batchCall('0x'), '0xbeef', usdc), new ToolError(`the Loose batch pays ${elsewhere}, not the payee ${payee}`))
  t.strictSame(given, ['0xbeef'], 'the reader is given the payment batch')
  const otherTarget = { network, delegates: [{ ...(loose.delegates[0] as object), tools: { batch: 'loose_batch', execute: 'loose_execute' }, read: () => ({ ...loose.delegates[0]!.read(network, {} as never, undefined)!, payee, target: elsewhere }) }] } as unknown as RelayContext
  t.throws(
    () => readBatch(otherTarget, batchCall('0x'), '0x', usdc),
    new ToolError(`the Loose batch for ${account} goes to ${elsewhere}, but the call goes to ${account}: pass the call loose_execute returned`),
  )
  // the batch's target, not its account, is where the call must go (a delegation manager, an EntryPoint)
  const viaEntryPoint = { network, delegates: [{ ...(loose.delegates[0] as object), read: () => ({ ...loose.delegates[0]!.read(network, {} as never, undefined)!, payee, account: elsewhere }) }] } as unknown as RelayContext
  t.match(readBatch(viaEntryPoint, batchCall('0x'), '0x', usdc), { form: 'batch', account: elsewhere, target: account })
  // the reader's payment batch and its gas are the relay's
  const exact = { network, delegates: [{ ...(loose.delegates[0] as object), read: () => ({ ...loose.delegates[0]!.read(network, {} as never, undefined)!, payee }) }] } as unknown as RelayContext
  t.match(readBatch(exact, batchCall('0x'), '0x', usdc), { form: 'batch', paymentData: '0x01', paymentGas: 1n, data: '0x' })
  // no reader recognises the call
  const refusal =
    'refused: a call that pays somewhere inside is not accepted, since it cannot be made safe. Pay one of two ways: ' +
    '{token, authorization, signature}, a signed EIP-3009 transfer to the payee (payment_authorization prepares it), '
  const both = "batches, one that only pays and one of the account's calls (calibur_batch prepares both; calibur_execute returns the call and payment to submit)"
  t.throws(() => readBatch(context, batchCall('0x1234'), signedPayment(usdc.address, 5n), usdc), new ToolError(`${refusal}or Calibur ${both}`))
  t.throws(() => readBatch(noReaders, batchCall('0x1234'), undefined, usdc), new ToolError(`${refusal}or a delegate batch (no delegate group is enabled on this server)`))
  const twoReaders = { network, delegates: [...(context.delegates as never[]), { ...(context.delegates[0] as object), name: 'Other', tools: { batch: 'other_batch', execute: 'other_execute' }, read: () => undefined }] } as unknown as RelayContext
  t.throws(
    () => readBatch(twoReaders, batchCall('0x1234'), undefined, usdc),
    new ToolError(`${refusal}or Calibur or Other ${both.slice(0, -1)}; other_batch prepares both; other_execute returns the call and payment to submit)`),
    'each served delegate named by its own tools',
  )
  // the payment batch given as the call is not read as one: it is a signed execute, refused as out of order
  t.throws(
    () => readBatch(context, batchCall(signedPayment(usdc.address, 5n)), signedCalls, usdc),
    new ToolError("the batch of the account's calls has nonce key 0 seq 9; it must be signed at key 0, seq 11, right after the payment batch's, so that it runs only after the payment: build both with calibur_batch"),
  )
  // the first reader that recognises it answers; the others are passed over until then
  const passing = { network, delegates: [{ ...(context.delegates[0] as object), name: 'Other', read: () => undefined }, ...(context.delegates as never[])] } as unknown as RelayContext
  t.equal(readBatch(passing, batchCall(signedCalls), signedPayment(usdc.address, 6n), usdc).amount, 6n)
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
