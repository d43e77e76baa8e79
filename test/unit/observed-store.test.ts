import type { FastifyBaseLogger } from 'fastify'
import t from 'tap'
import { Metrics } from '../../core/metrics.ts'
import { observedStore } from '../../core/store/observedStore.ts'
import { SqliteSubmissionStore } from '../../core/store/sqliteStore.ts'
import type { SentTransaction, Submission, SubmissionStore } from '../../core/store/store.ts'

// Transactions stored before lanes name no key: they are the first lane's.
const FIRST_LANE = '0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65'

// observedStore (core/store/observedStore.ts) over a real SQLite store: every line it logs (level,
// fields, message), every count and time it records, and that every other call answers as the
// store does. The logger is a recorder of what it is given; the metrics are Bruno's own registry.

interface Line {
  readonly level: string
  readonly fields: Record<string, unknown>
  readonly message: string
}

function recorder(): { log: FastifyBaseLogger; lines: Line[] } {
  const lines: Line[] = []
  const at = (level: string) => (fields: Record<string, unknown>, message: string) => {
    lines.push({ level, fields, message })
  }
  const log = { info: at('info'), warn: at('warn'), debug: at('debug'), error: at('error'), fatal: at('fatal'), trace: at('trace') }
  return { log: log as unknown as FastifyBaseLogger, lines }
}

/** A real store whose reads (`get`) are counted. */
function counted(store: SubmissionStore): { store: SubmissionStore; gets: () => number } {
  let gets = 0
  return {
    store: new Proxy(store, {
      get(target, property) {
        const value = Reflect.get(target, property) as unknown
        if (typeof value !== 'function') return value
        return (...args: unknown[]) => {
          if (property === 'get') gets++
          return (value as (...a: unknown[]) => unknown).apply(target, args)
        }
      },
    }),
    gets: () => gets,
  }
}

const TOKEN = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913'

function submission(id: string, overrides: Partial<Submission> = {}): Submission {
  return {
    id,
    chain: 'base',
    stage: 'waiting',
    createdAt: 1_760_000_000_000,
    updatedAt: 1_760_000_000_000,
    deadline: 1_760_000_600,
    request: { call: { to: TOKEN, data: '0x70a08231', value: '0' }, payment: { token: TOKEN, amountBaseUnits: '1234', batch: '0xc3c16ee4' } },
    ...overrides,
  }
}

const sent: SentTransaction = {
  hash: `0x${'ab'.repeat(32)}`,
  nonce: 4,
  raw: '0x02f8',
  maxFeePerGas: '2000000000',
  maxPriorityFeePerGas: '1000000',
  gas: '90000',
  callGas: '40000',
  sentAt: 1_760_000_000_500,
  firstSentAt: 1_760_000_000_500,
  hashes: [`0x${'ab'.repeat(32)}`],
}

async function counts(metrics: Metrics): Promise<Record<string, number>> {
  const out: Record<string, number> = {}
  for (const { labels, value } of (await metrics.submissions.get()).values) out[`${labels.chain}/${labels.stage}`] = value
  return out
}

async function histogram(metrics: Metrics): Promise<Record<string, number>> {
  const out: Record<string, number> = {}
  for (const { labels: named, value, metricName } of (await metrics.timeToDone.get()).values) {
    const labels = named as Record<string, unknown>
    out[`${metricName?.replace('bruno_submission_done_seconds', '')}${labels.le === undefined ? '' : `:${String(labels.le)}`}:${String(labels.chain)}`] = value
  }
  return out
}

t.test('insert: an accepted submission is counted in its stage and logged at info', async (t) => {
  const base = new SqliteSubmissionStore(':memory:')
  t.teardown(() => base.close())
  const { log, lines } = recorder()
  const metrics = new Metrics()
  const store = observedStore(base, log, metrics)
  const first = submission('sub-1', { identity: 'id-1' })
  t.strictSame(await store.insert(first), first)
  t.strictSame(await store.insert(submission('sub-2', { chain: 'optimism', stage: 'sending' })), submission('sub-2', { chain: 'optimism', stage: 'sending' }))
  t.strictSame(lines, [
    { level: 'info', fields: { submission: 'sub-1', chain: 'base', stage: 'waiting' }, message: 'submission accepted' },
    { level: 'info', fields: { submission: 'sub-2', chain: 'optimism', stage: 'sending' }, message: 'submission accepted' },
  ])
  t.strictSame(await counts(metrics), { 'base/waiting': 1, 'optimism/sending': 1 })

  // The same payment again: the active one answers, logged as a repeat and not counted.
  lines.length = 0
  const repeat = await store.insert(submission('sub-3', { chain: 'other', identity: 'id-1' }))
  t.strictSame(repeat, first, 'the active submission with that identity')
  t.strictSame(lines, [{ level: 'info', fields: { submission: 'sub-1', chain: 'base' }, message: 'submission repeated: the active one with the same payment answered' }])
  t.strictSame(await counts(metrics), { 'base/waiting': 1, 'optimism/sending': 1 })
  t.equal(await store.get('sub-3'), undefined, 'nothing stored for the repeat')

  // A store refusal passes through, logging nothing.
  lines.length = 0
  await t.rejects(store.insert(submission('sub-2')), { message: 'submission sub-2 already exists' })
  t.strictSame(lines, [])
})

t.test('insert without metrics still logs', async (t) => {
  const base = new SqliteSubmissionStore(':memory:')
  t.teardown(() => base.close())
  const { log, lines } = recorder()
  const store = observedStore(base, log)
  await store.insert(submission('plain'))
  t.strictSame(lines, [{ level: 'info', fields: { submission: 'plain', chain: 'base', stage: 'waiting' }, message: 'submission accepted' }])
})

t.test('update: each stage change is counted, done is timed and logged at info, failed at warn, the rest at debug', async (t) => {
  const base = new SqliteSubmissionStore(':memory:')
  t.teardown(() => base.close())
  const fence = await base.takeRunnerKey('bruno-runner:8453:0xaa')
  const { log, lines } = recorder()
  const metrics = new Metrics()
  const { store: spied, gets } = counted(base)
  const store = observedStore(spied, log, metrics)
  // Accepted 12.5 s ago: done now is 12.5 s and a little, in the histogram's (10, 20] bucket.
  const createdAt = Date.now() - 12_500
  await base.insert(submission('life', { createdAt, updatedAt: createdAt }))
  await base.insert(submission('doomed', { chain: 'optimism' }))

  await store.update('life', { reason: 'waiting for the price' }, fence)
  t.equal(gets(), 0, 'a patch without a stage reads nothing first')
  t.strictSame(lines, [], 'and is neither logged nor counted')
  t.equal((await base.get('life'))!.reason, 'waiting for the price', 'but it is written')

  await store.update('life', { stage: 'waiting', reason: null }, fence)
  t.equal(gets(), 1, 'a stage change reads the submission first')
  t.strictSame(lines, [], 'the same stage again is no change')

  await store.update('life', { stage: 'sending', transaction: sent }, fence)
  t.strictSame(lines, [{ level: 'debug', fields: { submission: 'life', chain: 'base', stage: 'sending' }, message: 'submission stage' }])
  t.equal((await base.get('life'))!.stage, 'sending', 'written')

  lines.length = 0
  await store.update('life', { stage: 'confirming' }, fence)
  t.strictSame(lines, [{ level: 'debug', fields: { submission: 'life', chain: 'base', stage: 'confirming' }, message: 'submission stage' }])

  lines.length = 0
  const beforeDone = Date.now()
  await store.update('life', { stage: 'done', blockNumber: '77', gasUsed: '50000', fee: '12' }, fence)
  const afterDone = Date.now()
  t.equal(lines.length, 1)
  const done = lines[0]!
  t.equal(done.level, 'info')
  t.equal(done.message, 'submission done')
  const { seconds, ...rest } = done.fields
  t.strictSame(rest, { submission: 'life', chain: 'base', stage: 'done', blockNumber: '77' })
  t.ok(typeof seconds === 'number' && seconds >= (beforeDone - createdAt) / 1000 && seconds <= (afterDone - createdAt) / 1000, `seconds since accepted (${String(seconds)})`)
  t.ok((seconds as number) > 12.4 && (seconds as number) < 20, 'about 12.5 s')
  const timed = await histogram(metrics)
  t.equal(timed['_count:base'], 1, 'one time observed')
  t.equal(timed['_sum:base'], seconds, 'the time logged')
  t.equal(timed['_bucket:10:base'], 0, 'not within 10 s')
  t.equal(timed['_bucket:20:base'], 1, 'within 20 s')

  lines.length = 0
  await store.update('doomed', { stage: 'failed', reason: 'the payment reverted', fault: 'revert' }, fence)
  t.strictSame(lines, [{ level: 'warn', fields: { submission: 'doomed', chain: 'optimism', stage: 'failed', reason: 'the payment reverted' }, message: 'submission failed' }])

  t.strictSame(await counts(metrics), { 'base/sending': 1, 'base/confirming': 1, 'base/done': 1, 'optimism/failed': 1 })
  t.equal((await histogram(metrics))['_count:optimism'], undefined, 'a failure is not timed')

  // An unknown id: nothing to count or log.
  lines.length = 0
  await store.update('missing', { stage: 'done' }, fence)
  t.strictSame(lines, [])
  t.strictSame(await counts(metrics), { 'base/sending': 1, 'base/confirming': 1, 'base/done': 1, 'optimism/failed': 1 })

  // A stale fence: the store refuses, nothing is logged or counted.
  await base.takeRunnerKey('bruno-runner:8453:0xaa')
  await base.insert(submission('late'))
  await t.rejects(store.update('late', { stage: 'sending' }, fence), { name: 'StaleEpochError' })
  t.strictSame(lines, [])
  t.equal((await base.get('late'))!.stage, 'waiting')
})

t.test('update without metrics logs the same lines', async (t) => {
  const base = new SqliteSubmissionStore(':memory:')
  t.teardown(() => base.close())
  const fence = await base.takeRunnerKey('k')
  const { log, lines } = recorder()
  const store = observedStore(base, log)
  await base.insert(submission('a'))
  await base.insert(submission('b'))
  await store.update('a', { stage: 'done', blockNumber: '9' }, fence)
  await store.update('b', { stage: 'failed', reason: 'expired' }, fence)
  t.strictSame(
    lines.map((line) => [line.level, line.message, line.fields.submission]),
    [
      ['info', 'submission done', 'a'],
      ['warn', 'submission failed', 'b'],
    ],
  )
})

t.test('prune: a pruning that deletes is logged with its count, one that deletes nothing is not', async (t) => {
  const base = new SqliteSubmissionStore(':memory:')
  t.teardown(() => base.close())
  const fence = await base.takeRunnerKey('k')
  const { log, lines } = recorder()
  const store = observedStore(base, log, new Metrics())
  await base.insert(submission('old-1', { stage: 'done', updatedAt: 1_000 }))
  await base.insert(submission('old-2', { stage: 'failed', updatedAt: 2_000 }))
  await base.insert(submission('new', { stage: 'done', updatedAt: 5_000 }))
  t.equal(await store.prune(1_000, fence), 0)
  t.strictSame(lines, [])
  t.equal(await store.prune(3_000, fence), 2)
  t.strictSame(lines, [{ level: 'info', fields: { count: 2 }, message: 'settled submissions pruned' }])
  t.strictSame((await base.get('new'))?.id, 'new')
})

t.test('every other call answers as the store does', async (t) => {
  const base = new SqliteSubmissionStore(':memory:')
  const { log, lines } = recorder()
  const store = observedStore(base, log)
  const fence = await store.takeRunnerKey('bruno-runner:1:0xbb')
  t.strictSame(fence, { key: 'bruno-runner:1:0xbb', epoch: 1 })
  t.strictSame(await store.takeRunnerKey('bruno-runner:1:0xbb'), { key: 'bruno-runner:1:0xbb', epoch: 2 })
  t.equal(await store.runnerEpoch('bruno-runner:1:0xbb'), 2)
  t.equal(await store.runnerEpoch('never'), 0)
  const one = submission('one', { identity: 'pay-1', payer: '0xpayer', client: '10.0.0.1' })
  await base.insert(one)
  await base.insert(submission('two', { createdAt: 1_760_000_000_001, payer: '0xpayer' }))
  await base.insert(submission('elsewhere', { chain: 'optimism' }))
  t.strictSame(await store.get('one'), one)
  t.equal(await store.get('none'), undefined)
  t.strictSame((await store.active('base')).map((s) => s.id), ['one', 'two'])
  t.strictSame(await store.activeByIdentity('pay-1'), one)
  t.equal(await store.activeByIdentity('pay-2'), undefined)
  t.equal(await store.highestNonce('base', FIRST_LANE, true), undefined)
  await base.update('two', { stage: 'sending', transaction: { ...sent, nonce: 11 } }, { key: 'bruno-runner:1:0xbb', epoch: 2 })
  t.equal(await store.highestNonce('base', FIRST_LANE, true), 11)
  t.strictSame(await store.standing('0xpayer', '10.0.0.1', 0), { payer: { active: 2, faults: 0, reverts: 0 }, client: { active: 1, faults: 0, reverts: 0 } })
  t.equal(await store.ping(), true)
  t.strictSame(lines, [], 'none of these is logged')
  await store.close()
  await t.rejects(base.ping(), 'closing the observed store closes the store')
})

t.test('done with a call that failed on chain: a warn line with the call\'s reason, and bruno_calls_failed_total (issue 29, point 9)', async (t) => {
  const base = new SqliteSubmissionStore(':memory:')
  t.teardown(() => base.close())
  const fence = await base.takeRunnerKey('k')
  const { log, lines } = recorder()
  const metrics = new Metrics()
  const store = observedStore(base, log, metrics)
  await base.insert(submission('undone', { stage: 'sending', transaction: sent }))
  await base.insert(submission('fine', { stage: 'sending', transaction: sent }))
  // The outcome written at confirming, the stage done later on its own: the line is written at done.
  const outcome = { paidBaseUnits: '1234', callSucceeded: false, callReason: 'the call reverted: ERC20: transfer amount exceeds balance' }
  await store.update('undone', { stage: 'confirming', blockNumber: '9', outcome }, fence)
  lines.length = 0
  await store.update('undone', { stage: 'done' }, fence)
  await store.update('fine', { stage: 'done', blockNumber: '10', outcome: { paidBaseUnits: '1234', callSucceeded: true } }, fence)
  t.equal(lines.length, 2)
  const [failed, fine] = lines
  t.equal(failed!.level, 'warn')
  t.equal(failed!.message, 'submission done: the call failed on chain (the payment was taken)')
  t.match(failed!.fields, { submission: 'undone', chain: 'base', stage: 'done', blockNumber: '9', callReason: outcome.callReason })
  t.equal(fine!.level, 'info', 'a call that succeeded: done at info')
  const text = await metrics.registry.getSingleMetricAsString('bruno_calls_failed_total')
  t.match(text, /^bruno_calls_failed_total\{chain="base"\} 1$/m, 'one failed call counted')
})
