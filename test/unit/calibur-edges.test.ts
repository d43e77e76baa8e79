import t from 'tap'
import { encodeFunctionData, erc20Abi, getAddress, parseAbi, zeroAddress, zeroHash, type Address } from 'viem'
import { paymentToken } from '../../core/relay/paymentToken.ts'
import type { PaymentServices } from '../../core/services.ts'
import { ToolError } from '../../core/tool.ts'
import { encodeOwnerExecute, encodeSignedExecute } from '../../plugins/calibur/executeCalldata.ts'
import { readPaymentFirstBatch } from '../../plugins/calibur/paymentFirstBatch.ts'
import { caliburTypedData, type SignedBatchedCallMessage } from '../../plugins/calibur/typedData.ts'
import { fakeClient, fakeNetwork, networkConfig } from './fakeChain.ts'

// Edges of plugins/calibur that test/unit/calibur.test.ts leaves open (each found by a surviving
// mutant, bench/MUTATION.md): what a caller-supplied message is refused with, calldata that only
// looks like hex, and a second call that decodes as another Calibur function.

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

t.test('readPaymentFirstBatch: a second call that is another Calibur function is not the owner execute', async (t) => {
  const config = networkConfig()
  const network = fakeNetwork(fakeClient({}).client, config)
  const payments: PaymentServices = { token: (_chain, token) => paymentToken(network, token), pricer: () => Promise.reject(new Error('no pricing here')) }
  const payee = getAddress(config.payee)
  const leg = { to: getAddress(config.tokens[0]!.address), value: '0', data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [payee, 1n] }) }
  const getSeq = encodeFunctionData({ abi: parseAbi(['function getSeq(uint256 key) view returns (uint256)']), functionName: 'getSeq', args: [5n] })
  t.throws(
    () => readPaymentFirstBatch(network, payments, '0x70997970C51812dc3A010C7d01b50e0d17dc79C8' as Address, { calls: [leg, { to: zeroAddress, value: '0', data: getSeq }], revertOnFailure: false }),
    new ToolError(
      `the batch is not payment-first: its second call is not the account's execute(BatchedCall). Bruno relays a batch whose first call pays ${payee} and whose own calls run after the ` +
        "Runner's payment guard, in a second call to the account (a failing call still pays): build it with calibur_batch",
    ),
  )
})
