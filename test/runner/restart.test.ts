import t from 'tap'
import type { Hex } from 'viem'
import { waitFor } from '../fixtures/waitFor.ts'
import { dropTransaction, lowerFees, raiseFees, rawBroadcasts, sendByHand, startRunnerDevnet, type RunnerDevnet } from './runnerDevnet.ts'

// The runner after a restart and around nonces the node lost: stored bytes are broadcast again as
// they are (never re-signed), the next nonce is past both the node's count and the store's highest,
// and a nonce the node has no transaction for is filled (with the stored bytes when a submission
// holds it, with a self-transfer when none does).

/** Waits, reading the clock, until a transaction sent at `sentAt` counts as stuck. */
const stuckNow = (devnet: RunnerDevnet, sentAt: number) => waitFor(async () => Date.now(), (now) => now - sentAt > devnet.network.runner.stuckAfterMs, 'stuck', 5_000, 20)
const stuckSoon = { configure: (network: RunnerDevnet['network']) => ({ ...network, runner: { ...network.runner, stuckAfterMs: 300 } }) }

t.test('after a restart: what was in flight is broadcast again as stored, and the next nonce is past the store\'s highest even when the node lost it', async (t) => {
  const devnet = await startRunnerDevnet(t)
  const [first, second] = [await devnet.payer(), await devnet.payer()]
  const a = await devnet.submit(first)
  const nonce = await devnet.client.getTransactionCount({ address: devnet.operator, blockTag: 'pending' })
  await devnet.pass()
  const sentA = await devnet.get(a.id)
  t.equal(sentA.transaction!.nonce, nonce)
  await dropTransaction(devnet, sentA.transaction!.hash)
  t.notOk(await devnet.nodeHas(sentA.transaction!.hash), 'the node lost it')
  await devnet.pass()
  t.notOk(await devnet.nodeHas(sentA.transaction!.hash), 'a pass that is not the first after a start does not broadcast it again (it is not stuck yet)')

  await devnet.restart()
  const b = await devnet.submit(second)
  const broadcastsBefore = rawBroadcasts(devnet).length
  await devnet.pass()
  t.ok(await devnet.nodeHas(sentA.transaction!.hash), 'the first pass after the restart broadcasts it again')
  t.same(rawBroadcasts(devnet).slice(broadcastsBefore).sort(), [sentA.transaction!.raw, (await devnet.get(b.id)).transaction!.raw].sort(), 'its stored bytes, as they are, beside the new one')
  const afterRestart = await devnet.get(a.id)
  t.same(afterRestart.transaction, sentA.transaction, 'nothing re-signed or re-stored')
  const sentB = await devnet.get(b.id)
  t.equal(sentB.transaction!.nonce, nonce + 1, 'the new one takes the nonce after the stored one, though the node counted only ' + nonce)

  await devnet.mine()
  await devnet.pass()
  t.equal((await devnet.get(a.id)).stage, 'done')
  t.equal((await devnet.get(b.id)).stage, 'done')
  t.equal(await devnet.client.getTransactionCount({ address: devnet.operator }), nonce + 2, 'two transactions, each sent once')
})

t.test('a nonce the node lost below a stuck transaction is filled with the stored bytes of the submission that holds it', async (t) => {
  const devnet = await startRunnerDevnet(t, stuckSoon)
  const [first, second] = [await devnet.payer(), await devnet.payer()]
  const a = await devnet.submit(first)
  const b = await devnet.submit(second)
  await devnet.pass()
  const [sentA, sentB] = [await devnet.get(a.id), await devnet.get(b.id)]
  t.equal(sentB.transaction!.nonce, sentA.transaction!.nonce + 1)
  await dropTransaction(devnet, sentA.transaction!.hash)
  t.equal(await devnet.client.getTransactionCount({ address: devnet.operator, blockTag: 'pending' }), sentA.transaction!.nonce, 'the node counts up to the lost one only')

  // No pass until both are stuck: one that began just short of it would replace them before it looked for a gap.
  await stuckNow(devnet, sentB.transaction!.sentAt)
  const broadcastsBefore = rawBroadcasts(devnet).length
  await devnet.pass()
  t.equal(rawBroadcasts(devnet)[broadcastsBefore], sentA.transaction!.raw, 'the gap is filled first, with the lost one\'s stored bytes')
  t.same(devnet.logged(/filled a nonce gap/), [], 'no self-transfer: a submission holds that nonce')
  await devnet.mine()
  await devnet.pass()
  t.equal((await devnet.get(a.id)).stage, 'done')
  t.equal((await devnet.get(b.id)).stage, 'done')
  t.equal(await devnet.client.getTransactionCount({ address: devnet.operator }), sentB.transaction!.nonce + 1, 'both nonces used, once each')
})

t.test('a nonce the node lost that no submission holds is filled with a self-transfer at the current fees', async (t) => {
  const devnet = await startRunnerDevnet(t, stuckSoon)
  devnet.allow(0, 1)
  const payer = await devnet.payer()
  const nonce = await devnet.client.getTransactionCount({ address: devnet.operator, blockTag: 'pending' })
  // A transaction sent with the runner's key by hand, then lost by the node.
  const byHand = await sendByHand(devnet, nonce)
  const a = await devnet.submit(payer)
  await devnet.pass()
  const sentA = await devnet.get(a.id)
  t.equal(sentA.transaction!.nonce, nonce + 1, 'the runner counts the pending one')
  await dropTransaction(devnet, byHand.hash)

  await stuckNow(devnet, sentA.transaction!.sentAt)
  await devnet.pass()
  const filled = devnet.logged(/^filled a nonce gap with a self-transfer$/)
  t.equal(filled.length, 1, 'filled once')
  t.equal(filled[0]!.nonce, nonce, 'at the lost nonce')
  t.equal(filled[0]!.next, nonce + 2, 'below the runner\'s next')
  t.equal(filled[0]!.refused, undefined, 'the node took it')
  const pool = (await devnet.client.request({ method: 'txpool_content' } as never)) as { pending: Record<string, Record<string, { to: string; value: string; gas: string; input: string; maxFeePerGas: string; maxPriorityFeePerGas: string }>> }
  const ours = Object.entries(pool.pending).find(([from]) => from.toLowerCase() === devnet.operator.toLowerCase())![1]
  const fill = ours[String(nonce)]!
  t.equal(fill.to.toLowerCase(), devnet.operator.toLowerCase(), 'a self-transfer')
  t.equal(BigInt(fill.value), 0n, 'of nothing')
  t.equal(BigInt(fill.gas), 21_000n)
  t.equal(fill.input, '0x')
  const block = await devnet.client.getBlock({ blockTag: 'latest' })
  const tip = BigInt((await devnet.client.request({ method: 'eth_maxPriorityFeePerGas' })) as Hex)
  t.equal(BigInt(fill.maxPriorityFeePerGas), tip, 'at the node\'s tip')
  t.equal(BigInt(fill.maxFeePerGas), (block.baseFeePerGas! * 12n) / 10n + tip, 'and the current max fee')
  await devnet.mine()
  await devnet.pass()
  t.equal((await devnet.get(a.id)).stage, 'done', 'the submission behind the gap is done')
  t.equal(await devnet.client.getTransactionCount({ address: devnet.operator }), nonce + 2)
})

t.test('a nonce the node lost whose payment is about to expire is taken back with a self-transfer, never its stored bytes (issue 27, point 7)', async (t) => {
  const devnet = await startRunnerDevnet(t, stuckSoon)
  devnet.allow(0, 1)
  const margin = devnet.network.relay.paymentMarginSec
  const [first, second] = [await devnet.payer(), await devnet.payer()]
  // Sent while more than the margin from expiring; within it about two seconds later.
  const validBefore = BigInt(Math.ceil((Date.now() + 1_500) / 1000) + margin)
  const a = await devnet.submit(first, { validBefore })
  const b = await devnet.submit(second)
  await devnet.pass()
  const [sentA, sentB] = [await devnet.get(a.id), await devnet.get(b.id)]
  t.equal(sentB.transaction!.nonce, sentA.transaction!.nonce + 1)
  await dropTransaction(devnet, sentA.transaction!.hash)
  // Both stuck, and a's payment within the margin: its bytes could now only revert (or be in too late).
  await waitFor(async () => Date.now(), (now) => BigInt(Math.floor(now / 1000)) > validBefore - BigInt(margin), 'within the margin', 10_000, 50)
  await stuckNow(devnet, sentB.transaction!.sentAt)
  const broadcastsBefore = rawBroadcasts(devnet).length
  await devnet.pass()
  const sent = rawBroadcasts(devnet).slice(broadcastsBefore)
  t.notOk(sent.includes(sentA.transaction!.raw), 'the lost relay\'s bytes were not sent again')
  const cancelled = await devnet.get(a.id)
  t.equal(cancelled.transaction!.cancel, true, 'its nonce taken back by a cancellation')
  t.equal(cancelled.transaction!.nonce, sentA.transaction!.nonce)
  t.equal(sent[0], cancelled.transaction!.raw, 'broadcast first, filling the gap')
  t.equal(cancelled.reason, `lost by the node, and its payment came within ${margin} s of expiring`)
  await devnet.mine()
  await devnet.pass()
  const settled = await devnet.get(a.id)
  t.equal(settled.stage, 'failed')
  t.equal(settled.fault, undefined, 'not counted against the payer: it voided nothing')
  t.match(settled.reason, /^cancelled: lost by the node/)
  t.equal((await devnet.get(b.id)).stage, 'done', 'the submission behind it went through')
})

// Issue 43, point 8: during a base fee spike the gap filler cancelled a lost relay at any price —
// 21,000 gas for 6.37 USDC against a 0.71 USDC payment, with nothing waiting behind its nonce. A gap is
// now filled only while a later nonce waits, and never for more than the relay's payment is worth.
/**
 * A relay sent, then lost by the node; the base fee raised far above what its payment covers; and the
 * relay's payment within the margin of expiring, its transaction stuck — with `behind` more
 * submissions sent after it, at the next nonces.
 */
async function lostExpiringAtSpike(devnet: RunnerDevnet, behind: number) {
  const margin = devnet.network.relay.paymentMarginSec
  const validBefore = BigInt(Math.ceil((Date.now() + 1_500) / 1000) + margin)
  const lost = await devnet.submit(await devnet.payer(), { validBefore })
  const later = []
  for (let index = 0; index < behind; index++) later.push(await devnet.submit(await devnet.payer()))
  await devnet.pass()
  const sent = (await devnet.get(lost.id)).transaction!
  await dropTransaction(devnet, sent.hash)
  await raiseFees(devnet)
  await waitFor(async () => Date.now(), (now) => BigInt(Math.floor(now / 1000)) > validBefore - BigInt(margin), 'within the margin', 10_000, 50)
  await stuckNow(devnet, sent.sentAt)
  return { lost, sent, later }
}

t.test('a lost relay about to expire, nothing after it, at a fee spike: no cancellation dearer than its payment', async (t) => {
  const devnet = await startRunnerDevnet(t, stuckSoon)
  const { lost } = await lostExpiringAtSpike(devnet, 0)
  const broadcastsBefore = rawBroadcasts(devnet).length
  await devnet.pass()
  t.same(rawBroadcasts(devnet).slice(broadcastsBefore), [], 'nothing sent: its nonce holds nothing back, and a cancellation would cost more than its payment')
  t.notOk((await devnet.get(lost.id)).transaction!.cancel, 'not cancelled')
  t.ok(devnet.logged(/^not cancelled: the cancellation would cost more than the payment is worth$/).length > 0, 'the runner says why')
})

t.test('a lost relay about to expire with a later nonce behind it, at a fee spike: the gap waits for the fees to fall, then is filled', async (t) => {
  const devnet = await startRunnerDevnet(t, stuckSoon)
  devnet.allow(0, 1)
  const { baseFeePerGas } = await devnet.client.getBlock({ blockTag: 'latest' })
  const { lost, sent, later } = await lostExpiringAtSpike(devnet, 1)
  await devnet.pass()
  t.notOk((await devnet.get(lost.id)).transaction!.cancel, 'at the spike: not cancelled, the cancellation dearer than the payment')
  t.equal(await devnet.client.getTransactionCount({ address: devnet.operator, blockTag: 'pending' }), sent.nonce, 'the gap is still there')
  await lowerFees(devnet, baseFeePerGas!)
  await devnet.pass()
  t.equal((await devnet.get(lost.id)).transaction!.cancel, true, 'the fees fallen: its nonce taken back')
  await devnet.mine()
  await devnet.pass()
  await devnet.mine()
  await devnet.pass()
  t.equal((await devnet.get(lost.id)).stage, 'failed')
  t.equal((await devnet.get(later[0]!.id)).stage, 'done', 'the one behind it went through')
})

t.test('after a restart, a relay in flight whose payment is about to expire is cancelled, not broadcast again', async (t) => {
  const devnet = await startRunnerDevnet(t)
  devnet.allow(0, 1)
  const margin = devnet.network.relay.paymentMarginSec
  const validBefore = BigInt(Math.ceil((Date.now() + 1_500) / 1000) + margin)
  const a = await devnet.submit(await devnet.payer(), { validBefore })
  await devnet.pass()
  const sentA = await devnet.get(a.id)
  await dropTransaction(devnet, sentA.transaction!.hash)
  await waitFor(async () => Date.now(), (now) => BigInt(Math.floor(now / 1000)) > validBefore - BigInt(margin), 'within the margin', 10_000, 50)
  await devnet.restart()
  const broadcastsBefore = rawBroadcasts(devnet).length
  await devnet.pass()
  const sent = rawBroadcasts(devnet).slice(broadcastsBefore)
  t.notOk(sent.includes(sentA.transaction!.raw), 'the stored bytes were not broadcast again')
  const cancelled = await devnet.get(a.id)
  t.equal(cancelled.transaction!.cancel, true, 'a cancellation took its nonce')
  t.same(sent, [cancelled.transaction!.raw])
  await devnet.mine()
  await devnet.pass()
  t.equal((await devnet.get(a.id)).stage, 'failed')
})
