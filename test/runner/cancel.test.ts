import t, { type Test } from 'tap'
import { getAddress, keccak256 } from 'viem'
import type { Submission } from '../../core/store/store.ts'
import { submitCall } from '../../core/relay/submit.ts'
import { waitFor } from '../fixtures/waitFor.ts'
import { answerTip, caliburBatchRequest, currentFees, expectCancelled, feeBump, signed, startRunnerDevnet, type RunnerDevnet } from './runnerDevnet.ts'

// The runner's cancellations, one pass at a time: a relay unincluded past `runner.maxSendingMs`, or
// whose payment comes within `relay.paymentMarginSec` of expiring, gives its nonce back through a
// 0-value self-transfer at raised fees (exactly the bump of its own, or the node's current fees
// where higher); a cancellation itself stuck is outbid again; none is sent that would cost more
// than the payment is worth; and the submission fails once the cancellation is mined. The node's
// tip is raised for the runner alone by a chaos rule (anvil's stays at 1 gwei).

/**
 * Far below the schema's minimums (10 s, 1 s): `configure` changes the config after it is parsed.
 * Short enough to wait out, long enough that a pass right after a send comes before them; the
 * relay is cancelled before it would be replaced (`#follow` asks for a cancellation first).
 */
const MAX_SENDING_MS = 300
const STUCK_AFTER_MS = 500

/** Passes until the stored submission is as `done` says. */
const passUntil = (devnet: RunnerDevnet, id: string, done: (submission: Submission) => boolean, what: string) =>
  waitFor(async () => (await devnet.pass(), devnet.get(id)), done, what, 5_000)

/** How many raw transactions the runner broadcast since `from` (an index into the chaos proxy's log). */
const broadcastsSince = (devnet: RunnerDevnet, from: number) => devnet.chaos.seen.slice(from).filter((seen) => seen.method === 'eth_sendRawTransaction').length

/** The stored cancellation is a 0-value self-transfer of 21,000 gas at the relay's nonce, signed as stored. */
function checkSelfTransfer(t: Test, devnet: RunnerDevnet, submission: Submission, relay: NonNullable<Submission['transaction']>) {
  const cancel = submission.transaction!
  const decoded = signed(submission)
  t.equal(cancel.cancel, true, 'marked a cancellation')
  t.equal(cancel.hash, keccak256(cancel.raw))
  t.equal(decoded.to && getAddress(decoded.to), devnet.operator, 'to the operator itself')
  t.equal(decoded.value ?? 0n, 0n, 'carrying no ETH')
  t.equal(decoded.data, undefined, 'and no data')
  t.equal(decoded.type, 'eip1559')
  t.equal(decoded.chainId, devnet.network.chainId)
  t.equal(decoded.nonce, relay.nonce, 'at the relay\'s nonce')
  t.equal(cancel.nonce, relay.nonce)
  t.equal(decoded.gas, 21_000n, '21,000 gas')
  t.equal(cancel.gas, '21000')
  t.equal(decoded.maxFeePerGas, BigInt(cancel.maxFeePerGas), 'signed as stored')
  t.equal(decoded.maxPriorityFeePerGas, BigInt(cancel.maxPriorityFeePerGas), 'signed as stored')
  t.equal(cancel.firstSentAt, relay.firstSentAt, 'first sent when the relay was')
  t.equal(submission.stage, 'sending')
}

t.test('a relay unincluded past maxSendingMs is cancelled (once it is worth it), outbid again when the cancellation sticks, and fails once it is mined', async (t) => {
  const devnet = await startRunnerDevnet(t, { configure: (network) => ({ ...network, runner: { ...network.runner, maxSendingMs: MAX_SENDING_MS, stuckAfterMs: STUCK_AFTER_MS } }) })
  devnet.allow(0, 1)
  const why = 'not included within 0.3 s'
  const submission = await devnet.submit(await devnet.payer())
  await devnet.pass()
  const sent = await devnet.get(submission.id)
  const relay = sent.transaction!
  await devnet.pass()
  t.ok(Date.now() - relay.firstSentAt < MAX_SENDING_MS, 'that pass came before maxSendingMs (else the machine is too slow for this test)')
  t.same(await devnet.get(submission.id), sent, 'right after the send, a pass leaves it')

  // Past maxSendingMs while the node asks a tip at which 21,000 gas costs more than the payment.
  const expensive = answerTip(devnet, 100_000_000_000n)
  const seen = devnet.chaos.seen.length
  await waitFor(async () => (await devnet.pass(), devnet.logged(/^not cancelled/)), (lines) => lines.length > 0, 'a cancellation held', 5_000)
  devnet.chaos.remove(expensive)
  const held = devnet.logged(/^not cancelled: the cancellation would cost more than the payment is worth$/)
  t.same(held.map((line) => [line.level, line.submission, line.nonce, line.why]), [[40, submission.id, relay.nonce, why]], 'warned, with the nonce and why')
  t.equal(broadcastsSince(devnet, seen), 0, 'nothing broadcast')
  t.same(await devnet.get(submission.id), sent, 'nothing stored: the relay waits at its fee')
  t.same(devnet.logged(/^cancelling a transaction$/), [])

  // At the node's own fees again: cancelled at the relay's fees, bumped (no block since: above the current ones).
  const current = await currentFees(devnet)
  await devnet.pass()
  const cancelled = await devnet.get(submission.id)
  const cancel = cancelled.transaction!
  t.ok(feeBump(devnet, relay.maxPriorityFeePerGas) > current.maxPriorityFeePerGas && feeBump(devnet, relay.maxFeePerGas) > current.maxFeePerGas, 'the bumped fees are above the current ones')
  checkSelfTransfer(t, devnet, cancelled, relay)
  t.equal(cancel.maxPriorityFeePerGas, feeBump(devnet, relay.maxPriorityFeePerGas).toString(), 'the tip: the relay\'s, bumped')
  t.equal(cancel.maxFeePerGas, feeBump(devnet, relay.maxFeePerGas).toString(), 'the max fee: the relay\'s, bumped')
  t.same(cancel.hashes, [relay.hash, cancel.hash], 'the relay\'s hash, then the cancellation\'s')
  t.ok(cancel.sentAt - relay.firstSentAt > MAX_SENDING_MS, 'sent only past maxSendingMs')
  t.equal(cancelled.reason, why, 'the reason: how long it waited')
  t.equal(await devnet.nodeHas(cancel.hash), true, 'the node holds the cancellation')
  t.equal(await devnet.nodeHas(relay.hash), false, 'in the relay\'s place')
  const lines = devnet.logged(/^cancelling a transaction$/)
  t.same(lines.map((line) => [line.level, line.submission, line.nonce, line.hash, line.why, line.refused]), [[40, submission.id, relay.nonce, cancel.hash, why, undefined]], 'warned, with the nonce, hash and why')

  await devnet.pass()
  t.ok(Date.now() - cancel.sentAt < STUCK_AFTER_MS, 'that pass came before stuckAfterMs (else the machine is too slow for this test)')
  t.same(await devnet.get(submission.id), cancelled, 'right after the cancellation, a pass leaves it')

  // The cancellation stuck, while the node asks a tip above the bump: outbid at the node's fees.
  const tip = 3_000_000_000n
  const rule = answerTip(devnet, tip)
  const raised = await currentFees(devnet, tip)
  const outbid = await passUntil(devnet, submission.id, (s) => s.transaction!.hashes.length === 3, 'the cancellation outbid')
  devnet.chaos.remove(rule)
  const again = outbid.transaction!
  t.ok(raised.maxPriorityFeePerGas > feeBump(devnet, cancel.maxPriorityFeePerGas) && raised.maxFeePerGas > feeBump(devnet, cancel.maxFeePerGas), 'the current fees are above the bumped ones')
  checkSelfTransfer(t, devnet, outbid, relay)
  t.equal(again.maxPriorityFeePerGas, tip.toString(), 'the tip: the node\'s')
  t.equal(again.maxFeePerGas, raised.maxFeePerGas.toString(), 'the max fee: the latest base fee × 1.2 + the node\'s tip')
  t.same(again.hashes, [relay.hash, cancel.hash, again.hash], 'three hashes now')
  t.ok(again.sentAt - cancel.sentAt > STUCK_AFTER_MS, 'outbid only once stuck for over stuckAfterMs')
  t.equal(outbid.reason, why, 'the reason kept')
  t.same(devnet.logged(/^cancelling a transaction$/).map((line) => [line.hash, line.why]), [[cancel.hash, why], [again.hash, why]])
  t.equal(await devnet.nodeHas(again.hash), true)
  t.equal(await devnet.nodeHas(cancel.hash), false)

  await devnet.mine()
  await devnet.pass()
  const failed = await devnet.get(submission.id)
  const receipt = await devnet.client.getTransactionReceipt({ hash: again.hash })
  t.equal(failed.stage, 'failed')
  t.equal(failed.reason, `cancelled: ${why}`)
  t.equal(failed.transaction!.hash, again.hash, 'with the cancellation mined')
  t.equal(failed.blockNumber, receipt.blockNumber.toString())
  t.equal(failed.gasUsed, '21000')
  t.equal(failed.fee, (21_000n * receipt.effectiveGasPrice).toString(), 'what the cancellation cost')
  t.equal(failed.outcome, undefined, 'no relay ran')
  t.equal(failed.fault, undefined, 'not the payer\'s doing')
})

t.test('a relay whose payment comes within paymentMarginSec of its validBefore is cancelled, and fails once that is mined', async (t) => {
  const devnet = await startRunnerDevnet(t)
  devnet.allow(0, 1)
  const margin = devnet.network.relay.paymentMarginSec
  // Submit takes validBefore ≥ now + margin, and the runner sends while that still holds: this one
  // leaves the submit and the send at least 1.5 s, and comes within the margin a second later.
  const validBefore = BigInt(Math.ceil((Date.now() + 500) / 1000) + margin)
  const submission = await devnet.submit(await devnet.payer(), { validBefore })
  await devnet.pass()
  const relay = (await devnet.get(submission.id)).transaction!
  t.equal((await devnet.get(submission.id)).stage, 'sending', 'sent while still more than the margin from expiring')

  const cancelled = await passUntil(devnet, submission.id, (s) => s.transaction!.cancel === true, 'the cancellation')
  const cancel = cancelled.transaction!
  const why = `not included before its payment came within ${margin} s of expiring`
  checkSelfTransfer(t, devnet, cancelled, relay)
  t.equal(cancelled.reason, why)
  t.ok(BigInt(Math.floor(cancel.sentAt / 1000)) > validBefore - BigInt(margin), 'cancelled only once less than the margin was left')
  t.equal(cancel.maxPriorityFeePerGas, feeBump(devnet, relay.maxPriorityFeePerGas).toString())
  t.equal(cancel.maxFeePerGas, feeBump(devnet, relay.maxFeePerGas).toString())
  t.same(cancel.hashes, [relay.hash, cancel.hash])
  t.same(devnet.logged(/^cancelling a transaction$/).map((line) => [line.submission, line.nonce, line.hash, line.why]), [[submission.id, relay.nonce, cancel.hash, why]])

  await expectCancelled(t, devnet, submission.id, cancel.hash, why)
})

t.test('maxSendingMs counts from the first broadcast: replacements do not put the cancellation off (issue 28, point 4)', async (t) => {
  // Replaced every 0.2 s while it waits (paid enough for every bump): counted from its latest replacement, it would
  // never be cancelled.
  const maxSendingMs = 1_500
  const devnet = await startRunnerDevnet(t, { configure: (network) => ({ ...network, runner: { ...network.runner, maxSendingMs, stuckAfterMs: 200 } }) })
  devnet.allow(0, 1)
  const submission = await devnet.submit(await devnet.payer(), { amount: 100_000_000n })
  await devnet.pass()
  const relay = (await devnet.get(submission.id)).transaction!
  let latest = relay
  const cancelled = await waitFor(
    async () => {
      await devnet.pass()
      const now = await devnet.get(submission.id)
      if (!now.transaction!.cancel) latest = now.transaction!
      return now
    },
    (now) => now.transaction!.cancel === true,
    'the cancellation',
    10_000,
    50,
  )
  t.ok(latest.hashes.length >= 2, `replaced ${latest.hashes.length - 1} time(s) before it`)
  t.equal(latest.firstSentAt, relay.firstSentAt, 'a replacement keeps the first broadcast\'s time')
  t.ok(latest.sentAt > relay.sentAt, 'and has its own')
  const cancel = cancelled.transaction!
  t.ok(cancel.sentAt - relay.firstSentAt > maxSendingMs, 'cancelled past maxSendingMs from the first broadcast')
  t.ok(cancel.sentAt - latest.sentAt < maxSendingMs, `before maxSendingMs from the latest replacement (${cancel.sentAt - latest.sentAt} ms)`)
  t.equal(cancelled.reason, 'not included within 1.5 s')
  await expectCancelled(t, devnet, submission.id, cancel.hash, cancelled.reason!)
})

t.test('a Calibur batch in flight whose deadline comes within paymentMarginSec is cancelled as a signed transfer is (issue 28, point 2)', async (t) => {
  const devnet = await startRunnerDevnet(t)
  devnet.allow(0, 1)
  const margin = devnet.network.relay.paymentMarginSec
  // Ignored, the batch would be included past its deadline: Calibur reverts SignatureExpired, the Runner with it,
  // and the runner pays for a payer it then bans.
  const deadline = BigInt(Math.ceil((Date.now() + 500) / 1000) + margin)
  const view = await submitCall(devnet.context, await caliburBatchRequest(devnet, deadline))
  await devnet.pass()
  const relay = (await devnet.get(view.id)).transaction!
  t.equal((await devnet.get(view.id)).stage, 'sending', 'sent while its deadline was more than the margin away')
  const cancelled = await passUntil(devnet, view.id, (s) => s.transaction!.cancel === true, 'the cancellation')
  const why = `not included before its payment came within ${margin} s of expiring`
  checkSelfTransfer(t, devnet, cancelled, relay)
  t.equal(cancelled.reason, why)
  t.ok(BigInt(Math.floor(cancelled.transaction!.sentAt / 1000)) > deadline - BigInt(margin), 'only once less than the margin was left')
  await expectCancelled(t, devnet, view.id, cancelled.transaction!.hash, why)
  t.equal((await devnet.get(view.id)).fault, 'payer', 'the payer chose that deadline: its fault, not a revert')
})
