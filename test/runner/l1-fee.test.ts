import t, { type Test } from 'tap'
import { parseTransaction, size, toHex, type Hex } from 'viem'
import { signedCharge } from '../../core/relay/runnerCall.ts'
import { GAS_PRICE_ORACLE, L1_FEE_HEADROOM_BPS } from '../../core/chain/l1DataFee.ts'
import { waitFor } from '../fixtures/waitFor.ts'
import { expectCancelled, startRunnerDevnet } from './runnerDevnet.ts'

// The runner on a chain with an L1 data fee (`l1DataFee: 'op-stack'`), which no signed field caps:
// each pass re-reads the L1 fee of the bytes in flight, and a relay whose L1 fee rose past what its
// payment covers is cancelled rather than included at a loss. The GasPriceOracle predeploy is played
// by a stand-in placed with anvil_setCode, as test/adversarial/l1-fee.test.ts does (anvil charges no
// L1 fee, with or without `--network optimism`: the runner only ever reads the oracle, so the
// fixture's plain anvil serves).

/**
 * Adversaries.sol's GasPriceOracleStandIn, hand-assembled (compiling it with solc would take seconds):
 * `getL1Fee(bytes)` answers (the bytes' length + 68) × slot 0, whatever the selector.
 * PUSH1 4 CALLDATALOAD (offset) PUSH1 4 ADD CALLDATALOAD (length) PUSH1 68 ADD PUSH0 SLOAD MUL
 * PUSH0 MSTORE PUSH1 32 PUSH0 RETURN
 */
const ORACLE_STAND_IN: Hex = '0x600435600401356044015f54025f5260205ff3'
const getL1FeeAbi = [{ type: 'function', name: 'getL1Fee', stateMutability: 'view', inputs: [{ name: '_data', type: 'bytes' }], outputs: [{ name: '', type: 'uint256' }] }] as const

/** A runner devnet as an OP-stack chain: the stand-in oracle at the predeploy, at 1,000 wei a byte; one cancellation allowed. */
async function opStackDevnet(t: Test) {
  const devnet = await startRunnerDevnet(t, { configure: (network) => ({ ...network, l1DataFee: 'op-stack' as const }) })
  devnet.allow(0, 1)
  await devnet.testClient.setCode({ address: GAS_PRICE_ORACLE, bytecode: ORACLE_STAND_IN })
  const setPerByte = (wei: bigint) => devnet.testClient.setStorageAt({ address: GAS_PRICE_ORACLE, index: toHex(0n, { size: 32 }), value: toHex(wei, { size: 32 }) })
  await setPerByte(1_000n)
  return { devnet, setPerByte }
}

t.test('a relay whose L1 data fee rises past its payment while it waits is cancelled, and fails once that is mined', async (t) => {
  const { devnet, setPerByte } = await opStackDevnet(t)
  const probe = await devnet.client.readContract({ address: GAS_PRICE_ORACLE, abi: getL1FeeAbi, functionName: 'getL1Fee', args: ['0x0102'] })
  t.equal(probe, (2n + 68n) * 1_000n, 'the stand-in answers (length + 68) × per-byte price')

  const submission = await devnet.submit(await devnet.payer())
  await devnet.pass()
  const sent = await devnet.get(submission.id)
  const relay = sent.transaction!
  t.equal(sent.stage, 'sending')

  // At the price it was sent at, a pass reads the L1 fee of the bytes in flight and leaves it.
  const seen = devnet.chaos.seen.length
  await devnet.pass()
  const oracleReads = devnet.chaos.seen.slice(seen).filter((request) => request.method === 'eth_call' && JSON.stringify(request.params).toLowerCase().includes(GAS_PRICE_ORACLE.toLowerCase()))
  t.equal(oracleReads.length, 1, 'the L1 fee was read once')
  t.equal(JSON.stringify(oracleReads[0]!.params).includes(relay.raw.slice(2)), true, 'of the signed bytes in flight')
  t.same(await devnet.get(submission.id), sent, 'still covered: nothing stored')

  // L1's fees rise far past what the payment covers.
  const perByte = 1_000_000_000_000n
  await setPerByte(perByte)
  const cancelled = await waitFor(async () => (await devnet.pass(), devnet.get(submission.id)), (s) => s.transaction!.cancel === true, 'the cancellation', 5_000)
  const oracleFee = (BigInt(size(relay.raw)) + 68n) * perByte
  const l1FeeWei = oracleFee + (oracleFee * L1_FEE_HEADROOM_BPS + 9_999n) / 10_000n
  const why = `its L1 data fee rose to ${l1FeeWei} wei while it waited, past what the payment covers`
  t.equal(cancelled.reason, why, 'the oracle\'s fee of the signed bytes, with the 25% headroom')
  const cancel = cancelled.transaction!
  t.same(cancel.hashes, [relay.hash, cancel.hash])
  t.equal(cancel.nonce, relay.nonce)
  t.equal(cancel.gas, '21000')
  t.same(devnet.logged(/^cancelling a transaction$/).map((line) => [line.submission, line.nonce, line.hash, line.why]), [[submission.id, relay.nonce, cancel.hash, why]])
  t.equal(await devnet.nodeHas(relay.hash), false, 'the relay is out of the pool')

  await expectCancelled(t, devnet, submission.id, cancel.hash, why)
})

t.test('a relay whose L1 data fee rises past what its charge counts, still within its payment, is replaced with a charge that counts the new fee', async (t) => {
  const { devnet, setPerByte } = await opStackDevnet(t)
  const submission = await devnet.submit(await devnet.payer())
  await devnet.pass()
  const relay = (await devnet.get(submission.id)).transaction!
  const oracleFee = (raw: Hex, perByte: bigint) => (BigInt(size(raw)) + 68n) * perByte
  const first = signedCharge(parseTransaction(relay.raw).data!)!
  t.ok(first.refundGas > 0n, 'the payee refunds: the relay signed a charge')
  t.ok(first.l1FeeWei >= oracleFee(relay.raw, 1_000n), `its L1 fee ${first.l1FeeWei} covers the fee of its bytes (${oracleFee(relay.raw, 1_000n)})`)

  // 40 % more a byte: past the charge's 25 % headroom, far within what the payment covers.
  await setPerByte(1_400n)
  const replaced = await waitFor(async () => (await devnet.pass(), devnet.get(submission.id)), (s) => s.transaction!.hashes.length === 2, 'the replacement', 5_000)
  const replacement = replaced.transaction!
  t.equal(replacement.nonce, relay.nonce, 'at the same nonce')
  t.equal(replacement.cancel, undefined, 'a relay, not a cancellation')
  const second = signedCharge(parseTransaction(replacement.raw).data!)!
  t.ok(second.l1FeeWei >= oracleFee(replacement.raw, 1_400n), `the new charge counts the new L1 fee: ${second.l1FeeWei} ≥ ${oracleFee(replacement.raw, 1_400n)}`)
  t.equal(second.refundGas, first.refundGas, 'the refund\'s cap kept')
  t.same(devnet.logged(/^replaced a stuck transaction$/).map((line) => line.submission), [submission.id])
  await devnet.mine()
  await devnet.pass()
  t.equal((await devnet.get(submission.id)).stage, 'done')
})

t.test('an OP-stack receipt\'s l1Fee is part of the fee recorded for the relay', async (t) => {
  const devnet = await startRunnerDevnet(t)
  const submission = await devnet.submit(await devnet.payer())
  await devnet.pass()
  const { hash } = (await devnet.get(submission.id)).transaction!
  await devnet.mine()
  // anvil's receipts carry no l1Fee; an OP-stack node's do: the L1 data fee the sender paid besides gas.
  const receipt = (await devnet.client.request({ method: 'eth_getTransactionReceipt', params: [hash] })) as unknown as Record<string, unknown> & { gasUsed: Hex; effectiveGasPrice: Hex }
  const l1Fee = 1_234_567_891_011n
  devnet.chaos.rule('an OP-stack receipt', (element) => element.method === 'eth_getTransactionReceipt' && (element.params as Hex[])[0] === hash, { result: { ...receipt, l1Fee: toHex(l1Fee) } })
  await devnet.pass()
  const done = await devnet.get(submission.id)
  t.equal(done.stage, 'done')
  t.equal(done.fee, (BigInt(receipt.gasUsed) * BigInt(receipt.effectiveGasPrice) + l1Fee).toString(), 'gas used × its price + the receipt\'s l1Fee')
})

t.test('a cancellation pays an L1 data fee too: one whose fee the payment does not cover is not sent (issue 28, point 10)', async (t) => {
  const { devnet, setPerByte } = await opStackDevnet(t)
  const margin = devnet.network.relay.paymentMarginSec
  const validBefore = BigInt(Math.ceil((Date.now() + 500) / 1000) + margin)
  const submission = await devnet.submit(await devnet.payer(), { validBefore })
  await devnet.pass()
  const relay = (await devnet.get(submission.id)).transaction!
  // Within the margin, the relay gives way to a cancellation (the payment is its cap). Priced with its L1 fee at
  // 10^13 wei a byte, the self-transfer costs about 2.3·10^15 wei, ten times the payment's worth: not sent.
  await waitFor(async () => Math.floor(Date.now() / 1000), (now) => BigInt(now) > validBefore - BigInt(margin), 'the payment within the margin', 5_000, 50)
  await setPerByte(10_000_000_000_000n)
  await devnet.pass()
  t.same(devnet.logged(/^not cancelled: the cancellation would cost more than the payment is worth$/).map((line) => line.submission), [submission.id])
  const held = await devnet.get(submission.id)
  t.equal(held.transaction!.cancel, undefined, 'no cancellation stored')
  t.same(held.transaction!.hashes, [relay.hash], 'nor sent')
  // At an L1 fee the payment covers, the same pass sends it.
  await setPerByte(1_000n)
  const cancelled = await waitFor(async () => (await devnet.pass(), devnet.get(submission.id)), (s) => s.transaction!.cancel === true, 'the cancellation', 5_000)
  t.equal(cancelled.reason, `not included before its payment came within ${margin} s of expiring`)
  await expectCancelled(t, devnet, submission.id, cancelled.transaction!.hash, cancelled.reason!)
})
