import pg from 'pg'
import t from 'tap'
import { PostgresSubmissionStore } from '../core/store/postgresStore.ts'
import { StaleEpochError, type SentTransaction, type Submission } from '../core/store/store.ts'
import { postgresDatabase, postgresSkip } from './fixtures/postgres.ts'
import { storeKinds } from './fixtures/storeKinds.ts'
import { waitFor } from './fixtures/waitFor.ts'

// Transactions stored before lanes name no key: they are the first lane's.
const FIRST_LANE = '0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65'

// Runner writes carry the fence their process took the key with: once another process has taken
// the key (a new epoch), the old fence's writes are refused and change nothing. Both stores.

const kinds = storeKinds('bruno-fencing-')

const USDC = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913'
const KEY = 'bruno-runner:8453:0x15d34aaf54267db7d7c367839aaf71a00a2c6a65'

function submission(id: string, stage: Submission['stage'] = 'waiting', updatedAt = Date.now()): Submission {
  return {
    id,
    chain: 'base',
    stage,
    createdAt: updatedAt,
    updatedAt,
    deadline: Math.floor(updatedAt / 1000) + 600,
    request: { call: { to: USDC, data: '0x70a08231', value: '0' }, payment: { token: USDC, amountBaseUnits: '1234', batch: '0xc3c16ee4' } },
  }
}

function transaction(nonce: number): SentTransaction {
  const hash = `0x${nonce.toString(16).padStart(64, '0')}` as const
  return { hash, nonce, raw: '0x02f8', maxFeePerGas: '2000000000', maxPriorityFeePerGas: '1000000', gas: '90000', callGas: '40000', sentAt: 1, firstSentAt: 1, hashes: [hash] }
}

for (const kind of kinds) {
  t.test(`${kind.name}: a write carrying a stale epoch is refused`, { skip: kind.skip }, async (t) => {
    const place = await kind.place(t)
    // Two processes on one store: the old owner, and the replica that takes the key over.
    const old = kind.open(place)
    const next = kind.open(place)
    t.teardown(() => Promise.all([old.close(), next.close()]))

    t.equal(await old.runnerEpoch(KEY), 0, 'a key never taken is at epoch 0')
    const stale = await old.takeRunnerKey(KEY)
    t.same(stale, { key: KEY, epoch: 1 }, 'the first to take it gets epoch 1')
    await old.insert(submission('s-1'))
    await old.insert(submission('s-2'))
    await old.insert(submission('settled', 'done', 1_000))
    await old.update('s-1', { stage: 'sending', transaction: transaction(7) }, stale)
    t.equal(await old.highestNonce('base', FIRST_LANE, true), 7, 'the owner reserves a nonce by storing its transaction')

    const fence = await next.takeRunnerKey(KEY)
    t.same(fence, { key: KEY, epoch: 2 }, 'a takeover raises the epoch')
    t.equal(await old.runnerEpoch(KEY), 2, 'which every process sees')
    t.equal((await next.takeRunnerKey('bruno-runner:1:0xaa')).epoch, 1, 'each key has an epoch of its own')

    const refused = await old.update('s-2', { stage: 'sending', transaction: transaction(8) }, stale).then(
      () => undefined,
      (error: unknown) => error,
    )
    t.ok(refused instanceof StaleEpochError, 'the old owner storing a transaction is refused')
    t.match(refused, { fence: stale, current: 2 }, 'naming its epoch and the current one')
    t.equal((await next.get('s-2'))?.stage, 'waiting', 'and changes nothing: the submission still waits')
    t.equal(await next.highestNonce('base', FIRST_LANE, true), 7, 'no nonce is reserved')
    await t.rejects(old.update('s-1', { stage: 'done', blockNumber: '1' }, stale), StaleEpochError, 'nor may it settle one')
    t.equal((await next.get('s-1'))?.stage, 'sending', 'it is still sending')
    await t.rejects(old.prune(Date.now(), stale), StaleEpochError, 'nor prune')
    t.ok(await next.get('settled'), 'the settled submission is still there')
    await t.rejects(old.update('s-2', { reason: 'held' }, { key: 'bruno-runner:9:0xaa', epoch: 1 }), StaleEpochError, 'a fence for a key never taken is refused')

    await next.update('s-2', { stage: 'sending', transaction: transaction(8) }, fence)
    t.equal((await old.get('s-2'))?.transaction?.nonce, 8, "the new owner's write goes through, seen by every process")
    t.equal(await next.prune(Date.now(), fence), 1, 'and so does its prune')
  })
}

t.test('postgres: a write and a takeover never interleave', { skip: postgresSkip() }, async (t) => {
  const url = await postgresDatabase(t)
  const store = new PostgresSubmissionStore(url)
  t.teardown(() => store.close())
  const admin = new pg.Client({ connectionString: url })
  await admin.connect()
  t.teardown(() => admin.end())
  const stale = await store.takeRunnerKey(KEY)
  await store.insert(submission('race-1'))
  /** Whether a statement of the store's is waiting for a row lock that `admin` holds. */
  const blocked = async () =>
    Number((await admin.query("SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = 'bruno' AND wait_event_type = 'Lock'")).rows[0].n) > 0

  t.test('a write that waited for a takeover reads the new epoch, not its snapshot, and is refused', async (t) => {
    await admin.query('BEGIN')
    await admin.query('UPDATE runner_epochs SET epoch = epoch + 1 WHERE key = $1', [KEY])
    const write = store.update('race-1', { stage: 'sending', transaction: transaction(3) }, stale).then(
      () => undefined,
      (error: unknown) => error,
    )
    await waitFor(blocked, (waiting) => waiting, 'the write to wait for the takeover')
    await admin.query('COMMIT')
    t.match(await write, { name: 'StaleEpochError', current: 2 }, 'refused once the takeover committed')
    t.equal((await store.get('race-1'))?.stage, 'waiting', 'and nothing was written')
  })

  t.test('a takeover waits for a write under way, so the new owner reads what it wrote', async (t) => {
    const fence = { key: KEY, epoch: 2 }
    // A fenced write holds the epoch's row FOR SHARE until it commits.
    await admin.query('BEGIN')
    await admin.query('SELECT epoch FROM runner_epochs WHERE key = $1 FOR SHARE', [KEY])
    await admin.query("UPDATE submissions SET stage = 'sending', tx_nonce = 4 WHERE id = 'race-1'")
    const takeover = store.takeRunnerKey(KEY)
    await waitFor(blocked, (waiting) => waiting, 'the takeover to wait for the write')
    await admin.query('COMMIT')
    t.same(await takeover, { key: KEY, epoch: 3 }, 'taken once the write committed')
    t.equal(await store.highestNonce('base', FIRST_LANE, true), 4, 'and the write is visible to the new owner')
    await t.rejects(store.update('race-1', { stage: 'done' }, fence), StaleEpochError, 'the writer, taken over, is refused from then on')
  })
})
