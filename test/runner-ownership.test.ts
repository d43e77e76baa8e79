import pg from 'pg'
import pino from 'pino'
import t from 'tap'
import { localOwnership } from '../core/store/ownership.ts'
import { advisoryLockKey, PostgresRunnerLock } from '../core/store/postgresRunnerLock.ts'
import { PostgresSubmissionStore } from '../core/store/postgresStore.ts'
import { SqliteSubmissionStore } from '../core/store/sqliteStore.ts'
import type { Submission } from '../core/store/store.ts'
import { postgresDatabase, postgresSkip } from './fixtures/postgres.ts'

const silent = pino({ level: 'silent' })

async function waitFor(done: () => boolean | Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const start = Date.now()
  while (!(await done())) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

t.test('local ownership: held once acquired, until released; each tenure at a new epoch', async (t) => {
  const store = new SqliteSubmissionStore(':memory:')
  t.teardown(() => store.close())
  const ownership = localOwnership(store, 'bruno-runner:1:0xaa')
  t.equal(ownership.held(), false)
  t.same(await ownership.acquire(), { key: 'bruno-runner:1:0xaa', epoch: 1 })
  t.same(await ownership.acquire(), { key: 'bruno-runner:1:0xaa', epoch: 1 }, 'the same fence while held')
  t.equal(ownership.held(), true)
  await ownership.release()
  t.equal(ownership.held(), false)
  t.same(await ownership.acquire(), { key: 'bruno-runner:1:0xaa', epoch: 2 }, 'taken again: the next epoch')
})

t.test('PostgreSQL runner lock', { skip: postgresSkip() }, async (t) => {
  const url = await postgresDatabase(t)
  const store = new PostgresSubmissionStore(url)
  t.teardown(() => store.close())
  const locks: PostgresRunnerLock[] = []
  const lock = (name: string, chain = 'local', onSubmission = () => {}) => {
    const created = new PostgresRunnerLock(url, { name, chain, onSubmission, epochs: store }, silent)
    locks.push(created)
    return created
  }
  t.teardown(() => Promise.all(locks.map((each) => each.release())))

  t.test('one holder per key; released, the other takes it', async (t) => {
    const a = lock('bruno-runner:1:0xaa')
    const b = lock('bruno-runner:1:0xaa')
    t.same(await a.acquire(), { key: 'bruno-runner:1:0xaa', epoch: 1 }, 'the first takes the key, at epoch 1')
    t.same(await a.acquire(), { key: 'bruno-runner:1:0xaa', epoch: 1 }, 'and still holds it, at the same epoch, when asking again')
    t.equal(await b.acquire(), undefined, 'the second cannot while the first holds it')
    t.equal(b.held(), false)
    await a.release()
    t.equal(a.held(), false)
    t.same(await b.acquire(), { key: 'bruno-runner:1:0xaa', epoch: 2 }, 'the second takes it once released, at the next epoch')
    t.equal(await a.acquire(), undefined, 'and now the first cannot')
  })

  t.test('different keys (another chain, another runner) do not block each other', async (t) => {
    t.equal((await lock('bruno-runner:2:0xaa').acquire())?.epoch, 1)
    t.equal((await lock('bruno-runner:3:0xaa').acquire())?.epoch, 1)
    t.equal((await lock('bruno-runner:2:0xbb').acquire())?.epoch, 1)
  })

  t.test('a holder whose session ends (terminated by the server) stops holding, and another takes over', async (t) => {
    const a = lock('bruno-runner:4:0xaa')
    const b = lock('bruno-runner:4:0xaa')
    t.equal((await a.acquire())?.epoch, 1)
    t.equal(await b.acquire(), undefined)
    const admin = new pg.Client({ connectionString: url })
    await admin.connect()
    t.teardown(() => admin.end())
    // The holder's own session: the one granted the advisory lock on the key (a 64-bit key sits
    // in pg_locks as classid, the high half, and objid, the low half).
    const { rowCount } = await admin.query(
      `SELECT pg_terminate_backend(pid) FROM pg_locks
       WHERE locktype = 'advisory' AND granted AND objsubid = 1 AND ((classid::bigint << 32) | objid::bigint) = $1::bigint`,
      [advisoryLockKey('bruno-runner:4:0xaa')],
    )
    t.equal(rowCount, 1, 'one session terminated')
    await waitFor(() => !a.held(), 'the holder to notice')
    t.equal((await b.acquire())?.epoch, 2, 'the other takes the key, at the next epoch')
  })
  t.test('the holder is woken by a submission any process stores for its chain', async (t) => {
    const wakes = { base: 0, other: 0 }
    const holder = lock('bruno-runner:5:0xaa', 'base', () => wakes.base++)
    const other = lock('bruno-runner:6:0xaa', 'other', () => wakes.other++)
    const fence = await holder.acquire()
    t.ok(fence)
    t.ok(await other.acquire())
    const submission = (id: string, chain: string): Submission => ({
      id,
      chain,
      stage: 'waiting',
      createdAt: 1,
      updatedAt: 1,
      deadline: 2,
      request: { call: { to: '0x0000000000000000000000000000000000000001', data: '0x', value: '0' }, payment: { token: '0x0000000000000000000000000000000000000002', amountBaseUnits: '1', batch: '0x' } },
    })
    // Each holder listens on its own session, so the two notifications arrive independently: wait for both.
    await store.insert(submission('wake-1', 'base'))
    await store.insert(submission('wake-2', 'other'))
    await waitFor(() => wakes.base >= 1 && wakes.other >= 1, 'both chains\' holders to wake')
    t.same(wakes, { base: 1, other: 1 }, 'each holder woke once, for its own chain only')
    await store.update('wake-1', { stage: 'failed', reason: 'test' }, fence!)
    await store.insert(submission('wake-3', 'other'))
    await waitFor(() => wakes.other === 2, 'the second wake')
    t.equal(wakes.base, 1, 'an update wakes no one')
  })
})
