import t from 'tap'
import { encodeFunctionData, erc20Abi, getAddress, parseAbi, zeroAddress, zeroHash, type Address, type Hex } from 'viem'
import { paymentToken } from '../../core/relay/paymentToken.ts'
import type { PaymentServices } from '../../core/services.ts'
import { ToolError } from '../../core/tool/tool.ts'
import { encodeOwnerExecute, encodeSignedExecute } from '../../plugins/calibur/executeCalldata.ts'
import { caliburDelegate, paymentBatch, readPaymentBatch } from '../../plugins/calibur/paymentFirstBatch.ts'
import { caliburTypedData, type SignedBatchedCallMessage } from '../../plugins/calibur/typedData.ts'
import { fakeClient, fakeNetwork, networkConfig } from './fakeChain.ts'
import { CALIBUR_ADDRESS } from '../../plugins/calibur/networkOptions.ts'

// Edges of plugins/calibur that test/unit/calibur.test.ts leaves open (each found by a surviving
// mutant, bench/MUTATION.md): what a caller-supplied message is refused with, calldata that only
// looks like hex, and a payment batch that decodes as another Calibur function.

const signature = `0x${'11'.repeat(65)}` as const
const message: SignedBatchedCallMessage = {
  batchedCall: { calls: [{ to: getAddress('0x1111111111111111111111111111111111111111'), value: '0', data: '0x' }], revertOnFailure: true },
  nonce: '0',
  keyHash: zeroHash,
  executor: zeroAddress,
  deadline: '0',
}

t.test('encodeSignedExecute and encodeOwnerExecute name the field a caller’s message gets wrong', async (t) => {
  t.throws(() => encodeSignedExecute({ message: { ...message, nonce: '0x1' }, signature }), new ToolError('nonce "0x1" is not a uint256 in decimal digits'))
  t.throws(() => encodeSignedExecute({ message: { ...message, deadline: '-5' }, signature }), new ToolError('deadline "-5" is not a uint256 in decimal digits'))
  const badValue = { calls: [message.batchedCall.calls[0]!, { ...message.batchedCall.calls[0]!, value: '1e18' }], revertOnFailure: true }
  t.throws(() => encodeOwnerExecute(badValue), new ToolError('calls[1].value "1e18" is not a uint256 in decimal digits'))
  t.throws(() => encodeSignedExecute({ message: { ...message, batchedCall: badValue }, signature }), new ToolError('calls[1].value "1e18" is not a uint256 in decimal digits'))
})

t.test('caliburTypedData: data that starts like hex but is not', async (t) => {
  const domain = { chainId: 1, account: getAddress('0x70997970C51812dc3A010C7d01b50e0d17dc79C8'), salt: zeroHash }
  for (const data of ['0xzz', '0x12 4']) {
    t.throws(
      () => caliburTypedData({ domain, batch: { calls: [{ to: message.batchedCall.calls[0]!.to, value: '0', data }], revertOnFailure: true }, nonce: 0n, deadline: 0n }),
      new ToolError('calls[0].data is not 0x-prefixed whole bytes'),
      data,
    )
  }
})

t.test('a payment batch that is another Calibur function, or only starts like a signed execute, is refused', async (t) => {
  const config = networkConfig()
  const network = fakeNetwork(fakeClient({}).client, config)
  const payments: Pick<PaymentServices, 'token'> = { token: (_chain, token) => paymentToken(network, token) }
  const payee = getAddress(config.payee)
  const account = getAddress('0x70997970C51812dc3A010C7d01b50e0d17dc79C8')
  const leg = { to: getAddress(config.tokens[0]!.address), value: '0', data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [payee, 1n] }) }
  const signedAt = (nonce: string, batch = paymentBatch(leg)) => encodeSignedExecute({ message: { ...message, batchedCall: batch, nonce }, signature })
  const reader = caliburDelegate(payments, () => CALIBUR_ADDRESS)
  const calls = signedAt('1', { calls: [message.batchedCall.calls[0]!], revertOnFailure: true })
  t.equal(reader.read(network, { to: account, data: calls } as never, signedAt('0'))?.amount, 1n, 'the pair as calibur_batch builds it')
  const getSeq = encodeFunctionData({ abi: parseAbi(['function getSeq(uint256 key) view returns (uint256)']), functionName: 'getSeq', args: [5n] })
  const notSigned = new ToolError("the payment's `batch` is not a signed Calibur execute: pass the payment calibur_execute returned")
  for (const [what, data] of [
    ['getSeq', getSeq],
    ['the selector alone', '0xc3c16ee4'],
    ['the selector, then a word', `0xc3c16ee4${'00'.repeat(32)}`],
    ['a signed execute cut in half', signedAt('0').slice(0, 2 + Math.floor((signedAt('0').length - 2) / 4) * 2)],
  ] as const) {
    t.throws(() => reader.read(network, { to: account, data: calls } as never, data as Hex), notSigned, what)
  }
  // a leg whose transfer is cut short is no transfer
  t.throws(
    () => readPaymentBatch(network, payments, paymentBatch({ ...leg, data: leg.data.slice(0, 10) as Hex })),
    new ToolError(
      `the payment batch is not payment-only: its call is not token.transfer(payee, amount). Bruno takes its payment in a batch of its own, the one call ` +
        `token.transfer(${payee}, amount), run before the batch of the account's calls: build both with calibur_batch`,
    ),
  )
  // the call itself decoding as another Calibur function is not read at all
  t.equal(reader.read(network, { to: account, data: getSeq } as never, signedAt('0')), undefined)
  t.equal(reader.read(network, { to: account, data: encodeOwnerExecute(paymentBatch(leg)) } as never, signedAt('0')), undefined)
  // a leg to the account itself (its own code run inside the payment batch) is no payment
  t.throws(
    () => readPaymentBatch(network, payments, paymentBatch({ ...leg, to: account as Address })),
    new ToolError(
      `the payment batch is not payment-only: its call goes to ${account}, not an accepted payment token. Bruno takes its payment in a batch of its own, the one call ` +
        `token.transfer(${payee}, amount), run before the batch of the account's calls: build both with calibur_batch`,
    ),
  )
})
