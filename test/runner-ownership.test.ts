import pg from 'pg'
import pino from 'pino'
import t from 'tap'
import { localOwnership } from '../core/relay/ownership.ts'
import { advisoryLockKey, PostgresRunnerLock } from '../core/relay/postgresRunnerLock.ts'
import { PostgresSubmissionStore } from '../core/relay/postgresStore.ts'
import type { Submission } from '../core/relay/store.ts'
import { postgresDatabase, postgresSkip } from './fixtures/postgres.ts'

const silent = pino({ level: 'silent' })

async function waitFor(done: () => boolean | Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const start = Date.now()
  while (!(await done())) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

t.test('local ownership: held once acquired, until released', async (t) => {
  const ownership = localOwnership()
  t.equal(ownership.held(), false)
  t.equal(await ownership.acquire(), true)
  t.equal(ownership.held(), true)
  await ownership.release()
  t.equal(ownership.held(), false)
})

t.test('PostgreSQL runner lock', { skip: postgresSkip() }, async (t) => {
  const url = await postgresDatabase(t)
  const locks: PostgresRunnerLock[] = []
  const lock = (name: string, chain = 'local', onSubmission = () => {}) => {
    const created = new PostgresRunnerLock(url, { name, chain, onSubmission }, silent)
    locks.push(created)
    return created
  }
  t.teardown(() => Promise.all(locks.map((each) => each.release())))

  t.test('one holder per key; released, the other takes it', async (t) => {
    const a = lock('bruno-runner:1:0xaa')
    const b = lock('bruno-runner:1:0xaa')
    t.equal(await a.acquire(), true, 'the first takes the key')
    t.equal(await a.acquire(), true, 'and still holds it when asking again')
    t.equal(await b.acquire(), false, 'the second cannot while the first holds it')
    t.equal(b.held(), false)
    await a.release()
    t.equal(a.held(), false)
    t.equal(await b.acquire(), true, 'the second takes it once released')
    t.equal(await a.acquire(), false, 'and now the first cannot')
  })

  t.test('different keys (another chain, another runner) do not block each other', async (t) => {
    t.equal(await lock('bruno-runner:2:0xaa').acquire(), true)
    t.equal(await lock('bruno-runner:3:0xaa').acquire(), true)
    t.equal(await lock('bruno-runner:2:0xbb').acquire(), true)
  })

  t.test('a holder whose session ends (terminated by the server) stops holding, and another takes over', async (t) => {
    const a = lock('bruno-runner:4:0xaa')
    const b = lock('bruno-runner:4:0xaa')
    t.equal(await a.acquire(), true)
    t.equal(await b.acquire(), false)
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
    t.equal(await b.acquire(), true, 'the other takes the key')
  })
  t.test('the holder is woken by a submission any process stores for its chain', async (t) => {
    const wakes = { base: 0, other: 0 }
    const holder = lock('bruno-runner:5:0xaa', 'base', () => wakes.base++)
    const other = lock('bruno-runner:6:0xaa', 'other', () => wakes.other++)
    t.equal(await holder.acquire(), true)
    t.equal(await other.acquire(), true)
    const store = new PostgresSubmissionStore(url)
    t.teardown(() => store.close())
    const submission = (id: string, chain: string): Submission => ({
      id,
      chain,
      stage: 'waiting',
      createdAt: 1,
      updatedAt: 1,
      deadline: 2,
      request: { call: { to: '0x0000000000000000000000000000000000000001', data: '0x', value: '0' }, payment: { token: '0x0000000000000000000000000000000000000002', amount: '1' } },
    })
    // Notifications arrive in commit order: once "other" has seen its own, it has seen base's too.
    await store.insert(submission('wake-1', 'base'))
    await store.insert(submission('wake-2', 'other'))
    await waitFor(() => wakes.other === 1, 'the other chain\'s holder to wake')
    t.same(wakes, { base: 1, other: 1 }, 'each holder woke once, for its own chain only')
    await store.update('wake-1', { stage: 'failed', reason: 'test' })
    await store.insert(submission('wake-3', 'other'))
    await waitFor(() => wakes.other === 2, 'the second wake')
    t.equal(wakes.base, 1, 'an update wakes no one')
  })
})
