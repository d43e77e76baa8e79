import t from 'tap'
import { localOwnership, type RunnerOwnership } from '../../core/store/ownership.ts'
import type { SqliteSubmissionStore } from '../../core/store/sqliteStore.ts'
import { waitFor } from '../fixtures/waitFor.ts'
import { broadcasts } from '../liveness/chaosProxy.ts'
import { startRunnerDevnet, type RunnerDevnet } from './runnerDevnet.ts'

// A pass the chain cannot answer (#run's backoff) and when a wake runs a pass at all: a failed pass
// is logged with its count and the wait before the next, doubling up to 30 s; a wake inside that
// wait, or after `stop()`, runs nothing (no request reaches the node); a pass that works again
// resets the count. A pass with nothing active reads nothing from the node.

/** pino's warn level. */
const WARN = 40
const MAX_BACKOFF_MS = 30_000

/** The backoff after `failures` failed passes in a row. */
const backoff = (devnet: RunnerDevnet, failures: number) => Math.min(devnet.network.runner.pollMs * 2 ** failures, MAX_BACKOFF_MS)

/** What each `runner pass failed` line says. */
const failedPasses = (devnet: RunnerDevnet) => devnet.logged(/^runner pass failed$/).map((line) => ({ level: line.level, failures: line.failures, retryInMs: line.retryInMs }))

/** A chain answer the runner's read cannot use: the node's error for it. */
const down = { error: { code: -32000, message: 'the node is syncing' } }

t.test('a pass the chain cannot answer backs off, doubling; a wake inside the backoff runs nothing; a pass that works resets the count', async (t) => {
  const devnet = await startRunnerDevnet(t)
  const [first, second] = [await devnet.payer(), await devnet.payer()]
  const a = await devnet.submit(first)
  // The pass reads the runner's nonce first (none is known yet): the node does not answer it.
  const nonceRead = devnet.chaos.rule('no nonce', (element) => element.method === 'eth_getTransactionCount', down)

  const before = Date.now()
  await devnet.pass()
  t.same(failedPasses(devnet), [{ level: WARN, failures: 1, retryInMs: backoff(devnet, 1) }], 'the first failure, and the wait before the next pass')
  t.equal(nonceRead.hits, 1, 'it failed at the nonce read')
  t.match((devnet.logged(/^runner pass failed$/)[0]!.err as { message: string }).message, /the node is syncing/, 'with the chain\'s error')
  const seen = devnet.chaos.seen.length
  await devnet.pass()
  t.equal(devnet.chaos.seen.length, seen, 'a wake inside the backoff reads nothing')
  t.equal(failedPasses(devnet).length, 1, 'and fails nothing')

  // Passes keep being asked for; the next one runs once the backoff has passed, and fails again.
  await waitFor(async () => (await devnet.pass(), failedPasses(devnet).length), (failed) => failed === 2, 'the second failed pass')
  t.same(failedPasses(devnet)[1], { level: WARN, failures: 2, retryInMs: backoff(devnet, 2) }, 'the second failure waits twice as long')
  t.ok((devnet.logged(/^runner pass failed$/)[1]!.time as number) - before >= backoff(devnet, 1), 'not before the first backoff had passed')
  t.equal(nonceRead.hits, 2, 'one nonce read per pass that ran')
  const seenAgain = devnet.chaos.seen.length
  await devnet.pass()
  t.equal(devnet.chaos.seen.length, seenAgain, 'a wake inside the second backoff reads nothing either')
  t.equal((await devnet.get(a.id)).stage, 'waiting', 'nothing sent meanwhile')

  // The chain answers again: the next pass sends, and the count starts over.
  devnet.chaos.remove(nonceRead)
  const sent = await waitFor(async () => (await devnet.pass(), devnet.get(a.id)), (submission) => submission.stage === 'sending', 'sent once the chain answers')
  t.equal(sent.transaction!.nonce, await devnet.client.getTransactionCount({ address: devnet.operator }), 'at the node\'s next nonce')
  t.equal(failedPasses(devnet).length, 2, 'that pass did not fail')
  const b = await devnet.submit(second)
  // The nonce is known now; the fees for the new send are the pass's first read, and fail.
  const feeRead = devnet.chaos.rule('no fees', (element) => element.method === 'eth_maxPriorityFeePerGas', down)
  await devnet.pass()
  t.same(failedPasses(devnet)[2], { level: WARN, failures: 1, retryInMs: backoff(devnet, 1) }, 'after a pass that worked, a failure is the first again')
  t.equal(feeRead.hits, 1)
  t.equal((await devnet.get(b.id)).stage, 'waiting')
})

t.test('a pass with nothing active reads nothing (the first, the lane\'s nonce); stop() waits for the pass under way, and a wake after it runs nothing; the backoff is capped at 30 s', async (t) => {
  // A poll long enough that the first backoff (2 x pollMs) would pass the cap.
  // The key's ownership as the fixture gives it, counting its releases.
  let released = 0
  const ownership = (store: SqliteSubmissionStore, key: string): RunnerOwnership => {
    const local = localOwnership(store, key)
    return { ...local, release: () => (released++, local.release()) }
  }
  const devnet = await startRunnerDevnet(t, { ownership, configure: (network) => ({ ...network, runner: { ...network.runner, pollMs: 20_000 } }) })
  const [first, second] = [await devnet.payer(), await devnet.payer()]
  const seenAtStart = devnet.chaos.seen.length
  await devnet.pass()
  // Only the lane's next nonce, once, so that /readyz shows it before the first send (issue 49).
  t.same(devnet.chaos.seen.slice(seenAtStart).map((element) => element.method), ['eth_getTransactionCount'], 'the first pass, with nothing active, reads the lane\'s nonce and nothing else')
  const seenIdle = devnet.chaos.seen.length
  await devnet.pass()
  t.equal(devnet.chaos.seen.length, seenIdle, 'the next, nothing')

  const a = await devnet.submit(first)
  const under = devnet.pass()
  t.equal(devnet.pass(), under, 'a wake during a pass joins it')
  await devnet.runner.stop()
  t.equal((await devnet.get(a.id)).stage, 'sending', 'the pass under way ran to its end before stop() resolved')
  t.equal(broadcasts(devnet.chaos).length, 1, 'sent once: the joined wake ran no pass of its own')
  t.equal(released, 1, 'stop() gave the key up')
  await under
  const b = await devnet.submit(second)
  const seen = devnet.chaos.seen.length
  await devnet.pass()
  t.equal(devnet.chaos.seen.length, seen, 'a wake after stop() reads nothing')
  t.equal((await devnet.get(b.id)).stage, 'waiting', 'and sends nothing')

  // A new runner (a restart) reads its nonce first: the node does not answer it.
  await devnet.restart()
  devnet.chaos.rule('no nonce', (element) => element.method === 'eth_getTransactionCount', down)
  await devnet.pass()
  t.equal(backoff(devnet, 1), MAX_BACKOFF_MS, 'uncapped, it would be 40 s')
  t.same(failedPasses(devnet), [{ level: WARN, failures: 1, retryInMs: MAX_BACKOFF_MS }], 'capped at 30 s')
  const seenAfter = devnet.chaos.seen.length
  await devnet.pass()
  t.equal(devnet.chaos.seen.length, seenAfter, 'a wake within it reads nothing')
})
