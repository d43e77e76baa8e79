import type { FastifyBaseLogger } from 'fastify'
import { createServer, connect, type Socket } from 'node:net'
import { hostname } from 'node:os'
import pg from 'pg'
import t, { type Test } from 'tap'
import { openStore } from '../../core/store/openStore.ts'
import { advisoryLockKey, PostgresLockSession, PostgresRunnerLock, SUBMISSION_CHANNEL } from '../../core/store/postgresRunnerLock.ts'
import { PostgresSubmissionStore } from '../../core/store/postgresStore.ts'
import type { RunnerFence, Submission } from '../../core/store/store.ts'
import { postgresDatabase, postgresSkip } from '../fixtures/postgres.ts'

// PostgreSQL's own (core/store/postgresStore.ts, postgresRunnerLock.ts, openStore.ts's PostgreSQL
// branch): the schema made on first use and retried after a failure, the sessions' names, the
// announcement of each new submission, and the runner lock's tenure, log lines, wakes and loss.
// Runs only under .ci/with-postgres (or fails when BRUNO_TEST_PG_REQUIRED is set without it).

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

async function until(done: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const start = Date.now()
  while (!(await done())) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

async function admin(t: Test, url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  t.teardown(() => client.end())
  return client
}

const TOKEN = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913'
/** Who a lock session of this process says it is: its host and PID, in the session's name. */
const HOLDER = `${hostname()}:${process.pid}`
const SESSION_NAME = `bruno-runner-lock ${HOLDER}`

function submission(id: string, chain: string): Submission {
  return {
    id,
    chain,
    stage: 'waiting',
    createdAt: 1_760_000_000_000,
    updatedAt: 1_760_000_000_000,
    deadline: 1_760_000_600,
    request: { call: { to: TOKEN, data: '0x', value: '0' }, payment: { token: TOKEN, amountBaseUnits: '1', batch: '0x' } },
  }
}

t.test('advisoryLockKey: the first 8 bytes of the name\'s keccak-256, signed', async (t) => {
  // The documented example, and keccak256("") = 0xc5d2460186f7233c… (a well-known constant).
  t.equal(advisoryLockKey('bruno-runner:8453:0x15d34aaf54267db7d7c367839aaf71a00a2c6a65'), '-3510410603068101228')
  t.equal(advisoryLockKey(''), BigInt.asIntN(64, 0xc5d2460186f7233cn).toString())
  t.equal(SUBMISSION_CHANNEL, 'bruno_submission')
})

t.test('PostgreSQL store', { skip: postgresSkip() }, async (t) => {
  t.test('the schema is made on first use; a failure is retried on the next query', async (t) => {
    const ready = await postgresDatabase(t)
    const url = new URL(ready)
    const name = `${url.pathname.slice(1)}_late`
    url.pathname = `/${name}`
    const store = new PostgresSubmissionStore(url.toString())
    await t.rejects(store.ping(), { message: `database "${name}" does not exist` })
    const db = await admin(t, ready)
    await db.query(`CREATE DATABASE ${name}`)
    t.teardown(async () => {
      await store.close().catch(() => {})
      await db.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    })
    t.equal(await store.ping(), true, 'the next query makes the schema')
    const late = await admin(t, url.toString())
    const { rows } = await late.query<{ name: string }>("SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1")
    t.strictSame(rows.map((row) => row.name), ['runner_epochs', 'runner_replicas', 'submissions'])
  })

  t.test('a schema that cannot be made fails each query alike, and is made once the obstacle is gone', async (t) => {
    const url = await postgresDatabase(t)
    const db = await admin(t, url)
    // An older submissions table the store cannot index (no stage column).
    await db.query('CREATE TABLE submissions (id TEXT PRIMARY KEY)')
    const store = new PostgresSubmissionStore(url)
    t.teardown(() => store.close())
    await t.rejects(store.ping(), { message: 'column "stage" does not exist' })
    await t.rejects(store.get('x'), { message: 'column "stage" does not exist' }, 'the same error again: the failed session was not reused')
    t.strictSame((await db.query("SELECT to_regclass('runner_epochs') AS made")).rows, [{ made: null }], 'rolled back: nothing made')
    await db.query('DROP TABLE submissions')
    t.equal(await store.ping(), true)
    t.equal(await store.get('x'), undefined)
  })

  t.test('stores opened together make the schema once, each session named bruno; each new submission is announced with its chain\'s name, a repeat is not', async (t) => {
    const url = await postgresDatabase(t)
    const stores = [new PostgresSubmissionStore(url), new PostgresSubmissionStore(url), new PostgresSubmissionStore(url)]
    t.teardown(() => Promise.all(stores.map((store) => store.close())))
    t.strictSame(await Promise.all(stores.map((store) => store.ping())), [true, true, true])
    const db = await admin(t, url)
    const { rows } = await db.query<{ name: string }>('SELECT DISTINCT application_name AS name FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()')
    t.strictSame(rows.map((row) => row.name), ['bruno'])

    const store = stores[0]!
    const heard: { channel: string; payload: string | undefined }[] = []
    db.on('notification', (message) => heard.push({ channel: message.channel, payload: message.payload }))
    await db.query('LISTEN bruno_submission')
    await store.insert({ ...submission('n-1', 'base'), identity: 'pay-n' })
    await store.insert({ ...submission('n-2', 'base'), identity: 'pay-n' })
    await store.insert(submission('n-3', 'optimism'))
    await until(() => heard.length >= 2, 'two announcements')
    await db.query('SELECT 1')
    t.strictSame(heard, [
      { channel: 'bruno_submission', payload: 'base' },
      { channel: 'bruno_submission', payload: 'optimism' },
    ])
  })
  t.test('an idle pooled session the server ends is no crash: the store answers on a new one', async (t) => {
    const url = await postgresDatabase(t)
    const store = new PostgresSubmissionStore(url)
    t.teardown(() => store.close())
    t.equal(await store.ping(), true)
    const db = await admin(t, url)
    const bruno = "datname = current_database() AND application_name = 'bruno'"
    const ended = await db.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE ${bruno}`)
    t.equal(ended.rowCount, 1, 'the pool\'s one idle session ended')
    // The ended session's notice reaches the pool while this waits: with no 'error' listener on
    // the pool it would be an uncaught exception, and this file's process would die here.
    await until(async () => (await db.query(`SELECT 1 FROM pg_stat_activity WHERE ${bruno}`)).rowCount === 0, 'the session to end')
    await until(() => store.ping().catch(() => false), 'the store to answer')
    t.equal((await db.query(`SELECT 1 FROM pg_stat_activity WHERE ${bruno}`)).rowCount, 1, 'on a new session')
  })

  t.test('an insert whose identity clash finds no active submission after all is refused, not answered with nothing', async (t) => {
    // The race this stands for: the clashing submission settles between the insert and the read.
    class SettledMeanwhile extends PostgresSubmissionStore {
      override async activeByIdentity(): Promise<Submission | undefined> {
        return undefined
      }
    }
    const url = await postgresDatabase(t)
    const store = new SettledMeanwhile(url)
    t.teardown(() => store.close())
    await store.insert({ ...submission('r-1', 'base'), identity: 'pay-r' })
    await t.rejects(store.insert({ ...submission('r-2', 'base'), identity: 'pay-r' }), { message: 'submission r-2 was not stored' })
    t.equal(await store.get('r-2'), undefined)
  })
})

t.test('PostgreSQL runner lock', { skip: postgresSkip() }, async (t) => {
  const url = await postgresDatabase(t)
  const store = new PostgresSubmissionStore(url)
  t.teardown(() => store.close())
  const db = await admin(t, url)
  const locks: PostgresRunnerLock[] = []
  t.teardown(() => Promise.all(locks.map((lock) => lock.release())))
  const make = (name: string, chain: string, log: FastifyBaseLogger, onSubmission = () => {}, epochs: Pick<PostgresSubmissionStore, 'takeRunnerKey'> = store) => {
    const lock = new PostgresRunnerLock(url, { name, chain, onSubmission, epochs }, log)
    locks.push(lock)
    return lock
  }
  /** Ends the lock sessions (named `SESSION_NAME`) that hold, or do not hold, an advisory lock on `name`. */
  const terminate = async (name: string, holding: boolean): Promise<number> => {
    const { rowCount } = await db.query(
      `SELECT pg_terminate_backend(a.pid) FROM pg_stat_activity a
       WHERE a.datname = current_database() AND a.application_name LIKE 'bruno-runner-lock %'
         AND $2 = EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = a.pid AND l.locktype = 'advisory' AND l.granted
                          AND ((l.classid::bigint << 32) | l.objid::bigint) = $1::bigint)`,
      [advisoryLockKey(name), holding],
    )
    return rowCount ?? 0
  }

  t.test('a tenure: taken once (logged, one epoch), kept while held, refused to another; released, the other takes it', async (t) => {
    const name = 'bruno-runner:8453:0xaa'
    const a = recorder()
    const b = recorder()
    const first = make(name, 'base', a.log)
    const second = make(name, 'base', b.log)
    t.equal(first.held(), false)
    const fence = await first.acquire()
    t.strictSame(fence, { key: name, epoch: 1 })
    t.equal(first.held(), true)
    t.strictSame(a.lines, [{ level: 'info', fields: { epoch: 1 }, message: 'runner key lock taken: this process sends for the key' }])
    t.equal(await first.acquire(), fence, 'the same fence while held')
    t.equal(await store.runnerEpoch(name), 1, 'the epoch raised once')
    t.equal(a.lines.length, 1, 'logged once')
    t.equal(await second.acquire(), undefined, 'held elsewhere')
    t.equal(second.held(), false)
    t.equal(await store.runnerEpoch(name), 1, 'a refused acquire raises nothing')
    // It says once that it stands by, naming the holder by the host and PID its session carries (issue 29, point 9).
    const standing = `standing by: the Bruno at ${HOLDER} holds the runner key for base; this one takes it over when that one stops or goes silent`
    t.equal(b.lines.length, 1)
    t.match(b.lines[0], { level: 'info', fields: { key: name, holder: HOLDER, holderSince: Date }, message: standing })
    t.equal(await second.acquire(), undefined)
    t.equal(b.lines.length, 1, 'once per wait, not once a pass')
    const { rows } = await db.query<{ name: string; count: string }>(
      "SELECT application_name AS name, count(*) AS count FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE 'bruno-runner-lock %' GROUP BY 1",
    )
    t.strictSame(rows, [{ name: SESSION_NAME, count: '2' }], 'each lock its own session, named by its host and PID')
    await first.release()
    t.equal(first.held(), false)
    t.strictSame(await second.acquire(), { key: name, epoch: 2 })
    t.equal(second.held(), true)
    t.strictSame(b.lines.slice(1), [{ level: 'info', fields: { epoch: 2 }, message: 'runner key lock taken: this process sends for the key' }])
    t.strictSame(a.lines.length, 1, 'releasing logs nothing')
    await second.release()
    await second.release()
    await make('bruno-runner:never', 'base', a.log).release()
  })

  t.test('a replica\'s lanes on one session: one connection; a lock released frees its key alone; the session lost, every lock on it stops holding; the last to leave ends it', async (t) => {
    const session = new PostgresLockSession(url)
    const names = ['bruno-runner:20:0xa1', 'bruno-runner:20:0xa2', 'bruno-runner:20:0xa3']
    const logs = names.map(() => recorder())
    const wakes = [0, 0, 0]
    const lanes = names.map((name, index) => {
      const lock = new PostgresRunnerLock(url, { name, chain: 'base', onSubmission: () => wakes[index]!++, epochs: store, session }, logs[index]!.log)
      locks.push(lock)
      return lock
    })
    const lockSessions = async () => Number((await db.query<{ n: string }>("SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE 'bruno-runner-lock %'")).rows[0]!.n)
    const before = await lockSessions()
    for (const lane of lanes) t.ok(await lane.acquire())
    t.equal(await lockSessions(), before + 1, 'three keys held on one session')
    await store.insert(submission('lanes-1', 'base'))
    await until(() => wakes.every((count) => count === 1), 'every lane to be woken once')

    await lanes[1]!.release()
    t.strictSame(await make(names[1]!, 'base', recorder().log).acquire(), { key: names[1], epoch: 2 }, 'the released key is another\'s to take')
    t.ok(lanes[0]!.held() && lanes[2]!.held(), 'the others are still held')
    t.equal(await make(names[2]!, 'base', recorder().log).acquire(), undefined, 'and refused to another')

    t.equal(await terminate(names[0]!, true), 1, 'the shared session ended')
    await until(() => !lanes[0]!.held() && !lanes[2]!.held(), 'both holders to notice')
    t.strictSame(logs.map(({ lines }) => lines.filter((line) => line.message.startsWith('runner key lock lost')).length), [1, 0, 1], 'each holder logs its loss; the released one nothing')
    t.strictSame(await lanes[0]!.acquire(), { key: names[0], epoch: 2 }, 'taken again on a new session')
    const open = await lockSessions()
    for (const lane of lanes) await lane.release()
    await until(async () => (await lockSessions()) === open - 1, 'the session to end with its last lock')
  })

  t.test('only the holder is woken, and only for its chain', async (t) => {
    const name = 'bruno-runner:10:0xaa'
    const wakes = { holder: 0, waiting: 0, otherChain: 0 }
    const holder = make(name, 'optimism', recorder().log, () => wakes.holder++)
    const waiting = make(name, 'optimism', recorder().log, () => wakes.waiting++)
    const other = make('bruno-runner:11:0xaa', 'arbitrum', recorder().log, () => wakes.otherChain++)
    t.ok(await holder.acquire())
    t.equal(await waiting.acquire(), undefined)
    t.ok(await other.acquire())
    await store.insert(submission('w-1', 'optimism'))
    await store.insert(submission('w-2', 'arbitrum'))
    await until(() => wakes.otherChain === 1, 'the arbitrum holder to wake')
    await until(() => wakes.holder === 1, 'the optimism holder to wake')
    // A query on the waiting lock's session delivers first any announcement already sent to it.
    t.equal(await waiting.acquire(), undefined)
    await store.insert(submission('w-3', 'arbitrum'))
    await until(() => wakes.otherChain === 2, 'the second arbitrum wake')
    t.strictSame(wakes, { holder: 1, waiting: 0, otherChain: 2 })
  })

  t.test('a holder whose session is ended logs the loss and stops holding; a waiting one that loses its session logs nothing', async (t) => {
    const name = 'bruno-runner:12:0xaa'
    const a = recorder()
    const b = recorder()
    const holder = make(name, 'base', a.log)
    const waiting = make(name, 'base', b.log)
    t.ok(await holder.acquire())
    const sessions = async () => (await db.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1', [SESSION_NAME])).rows.map((row) => row.pid)
    const others = await sessions()
    t.equal(await waiting.acquire(), undefined)
    const own = (await sessions()).filter((pid) => !others.includes(pid))
    t.equal(own.length, 1, 'the waiting lock\'s session')
    t.strictSame((await db.query('SELECT pg_terminate_backend($1) AS ended', [own[0]])).rows, [{ ended: true }], 'the waiting session ended')
    t.equal(await terminate(name, true), 1, 'the holding session ended')
    await until(() => !holder.held(), 'the holder to notice')
    await until(() => a.lines.length === 2, 'the loss to be logged')
    t.equal(a.lines[1]!.level, 'warn')
    t.equal(a.lines[1]!.message, 'runner key lock lost: this process stops sending until it takes the lock again')
    t.strictSame(Object.keys(a.lines[1]!.fields), ['err'])
    t.ok(a.lines[1]!.fields.err === undefined || a.lines[1]!.fields.err instanceof Error, 'the connection\'s error, if any')
    // The waiting one reconnects on a next try (one on the ended session fails) and takes the key, now free.
    let fence: RunnerFence | undefined
    await until(async () => (fence = await waiting.acquire().catch(() => undefined)) !== undefined, 'the waiting lock to take the key')
    t.strictSame(fence, { key: name, epoch: 2 })
    t.strictSame(
      b.lines.map((line) => line.message),
      [`standing by: the Bruno at ${HOLDER} holds the runner key for base; this one takes it over when that one stops or goes silent`, 'runner key lock taken: this process sends for the key'],
      'no loss logged for a session that held nothing',
    )
    // And the first, on its next try, finds the key held.
    t.equal(await holder.acquire(), undefined)
    t.equal(holder.held(), false)
  })

  t.test('a lock lost while its epoch was being raised answers no fence; the next try takes it afresh', async (t) => {
    const name = 'bruno-runner:13:0xaa'
    const { log, lines } = recorder()
    let intercept = true
    const epochs = {
      takeRunnerKey: async (key: string): Promise<RunnerFence> => {
        if (intercept) {
          intercept = false
          t.equal(await terminate(name, true), 1)
          await until(() => lines.length === 1, 'the loss to be noticed')
        }
        return store.takeRunnerKey(key)
      },
    }
    const lock = make(name, 'base', log, () => {}, epochs)
    t.equal(await lock.acquire(), undefined, 'lost meanwhile')
    t.equal(lock.held(), false)
    t.equal(lines[0]!.message, 'runner key lock lost: this process stops sending until it takes the lock again')
    t.equal(await store.runnerEpoch(name), 1, 'that epoch goes unused')
    t.strictSame(await lock.acquire(), { key: name, epoch: 2 })
    t.equal(lock.held(), true)
    t.strictSame(lines.slice(1), [{ level: 'info', fields: { epoch: 2 }, message: 'runner key lock taken: this process sends for the key' }])
  })

  t.test('a lock that cannot connect rejects, holds nothing, and connects on a later try', async (t) => {
    const missing = new URL(url)
    const name = `${missing.pathname.slice(1)}_later`
    missing.pathname = `/${name}`
    const { log, lines } = recorder()
    const lock = new PostgresRunnerLock(missing.toString(), { name: 'bruno-runner:15:0xaa', chain: 'base', onSubmission: () => {}, epochs: store }, log)
    locks.push(lock)
    await t.rejects(lock.acquire(), { message: `database "${name}" does not exist` })
    t.equal(lock.held(), false)
    await t.rejects(lock.acquire(), { message: `database "${name}" does not exist` }, 'each try connects afresh')
    await db.query(`CREATE DATABASE ${name}`)
    t.teardown(async () => {
      await lock.release()
      await db.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    })
    t.strictSame(await lock.acquire(), { key: 'bruno-runner:15:0xaa', epoch: 1 })
    t.strictSame(lines, [{ level: 'info', fields: { epoch: 1 }, message: 'runner key lock taken: this process sends for the key' }], 'a failed connection is no loss to log')
  })

  t.test('a store that fails to raise the epoch: no fence, the lock kept, the next try raises it', async (t) => {
    const name = 'bruno-runner:14:0xaa'
    const { log, lines } = recorder()
    let fail = true
    const epochs = {
      takeRunnerKey: async (key: string): Promise<RunnerFence> => {
        if (fail) {
          fail = false
          throw new Error('store down')
        }
        return store.takeRunnerKey(key)
      },
    }
    const lock = make(name, 'base', log, () => {}, epochs)
    const rival = make(name, 'base', recorder().log)
    await t.rejects(lock.acquire(), { message: 'store down' })
    t.equal(lock.held(), false)
    t.equal(await rival.acquire(), undefined, 'the lock is still this one\'s')
    t.strictSame(await lock.acquire(), { key: name, epoch: 1 })
    t.equal(lines.length, 1)
  })

  t.test('a session lost while the try-lock answer was on its way: no fence, no epoch raised', async (t) => {
    const name = 'bruno-runner:16:0xaa'
    const { log, lines } = recorder()
    // The answer arrives, then the session's 'error', then acquire reads the answer.
    const Client = pg.Client
    class LostInFlight extends Client {
      override async query(...args: unknown[]): Promise<never> {
        const result = await (super.query as (...a: unknown[]) => Promise<never>)(...args)
        if (String(args[0]).includes('pg_try_advisory_lock')) this.emit('error', new Error('lost in flight'))
        return result
      }
    }
    pg.Client = LostInFlight as typeof Client
    t.teardown(() => {
      pg.Client = Client
    })
    const lock = make(name, 'base', log)
    t.equal(await lock.acquire(), undefined, 'the lock went with the session')
    t.equal(lock.held(), false)
    t.equal(await store.runnerEpoch(name), 0, 'no epoch raised')
    t.strictSame(lines, [], 'nothing held, so no loss to log')
  })

  t.test('a late event from a superseded session leaves the current tenure alone', async (t) => {
    const name = 'bruno-runner:17:0xaa'
    const { log, lines } = recorder()
    const Client = pg.Client
    const clients: pg.Client[] = []
    class Recorded extends Client {
      constructor(...args: ConstructorParameters<typeof Client>) {
        super(...args)
        clients.push(this)
      }
    }
    pg.Client = Recorded as typeof Client
    t.teardown(() => {
      pg.Client = Client
    })
    const lock = make(name, 'base', log)
    t.ok(await lock.acquire())
    t.equal(await terminate(name, true), 1)
    await until(() => !lock.held(), 'the loss to be noticed')
    let fence: RunnerFence | undefined
    await until(async () => (fence = await lock.acquire().catch(() => undefined)) !== undefined, 'the key taken again')
    t.strictSame(fence, { key: name, epoch: 2 })
    t.equal(clients.length, 2, 'on a new session')
    clients[0]!.emit('error', new Error('late'))
    clients[0]!.emit('end')
    t.equal(lock.held(), true, 'still held')
    t.equal(await lock.acquire(), fence, 'the same tenure')
    t.strictSame(lines.map((line) => line.message), [
      'runner key lock taken: this process sends for the key',
      'runner key lock lost: this process stops sending until it takes the lock again',
      'runner key lock taken: this process sends for the key',
    ], 'one loss logged: the real one')
    const { rows } = await db.query<{ n: string }>(
      `SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND granted AND ((classid::bigint << 32) | objid::bigint) = $1::bigint`,
      [advisoryLockKey(name)],
    )
    t.strictSame(rows, [{ n: '1' }], 'one session holds the lock: the current one')
  })

  t.test('a holder whose heartbeat goes unanswered (the network silent, the socket open) stops holding within the heartbeat\'s timeout', async (t) => {
    const name = 'bruno-runner:18:0xaa'
    const { log, lines } = recorder()
    // A proxy to the server that can stop forwarding in both directions without closing anything.
    const target = new URL(url)
    let silent = false
    const sockets: Socket[] = []
    const proxy = createServer((inbound) => {
      const outbound = connect(Number(target.port), target.hostname)
      sockets.push(inbound, outbound)
      inbound.on('data', (chunk) => silent || outbound.write(chunk))
      outbound.on('data', (chunk) => silent || inbound.write(chunk))
      inbound.on('error', () => {})
      outbound.on('error', () => {})
    })
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
    t.teardown(() => {
      for (const socket of sockets) socket.destroy()
      proxy.close()
    })
    const via = new URL(url)
    via.port = String((proxy.address() as { port: number }).port)
    // The lock's session goes through the proxy; its epochs live in the store, reached directly.
    const proxied = new PostgresRunnerLock(via.toString(), { name, chain: 'base', onSubmission: () => {}, epochs: store }, log)
    locks.push(proxied)
    t.ok(await proxied.acquire())
    silent = true
    const since = Date.now()
    // The promise (DEPLOYMENT.md, Failover): pings unanswered for 2 s end the tenure, and one goes
    // out every second; a TCP-level loss would take minutes to surface. The bound leaves room for
    // a loaded machine's late timers while staying far below TCP's.
    await until(() => !proxied.held(), 'the holder to give up', 15_000)
    t.ok(Date.now() - since >= 1_000, 'not before a ping could go unanswered')
    t.equal(lines.at(-1)?.message, 'runner key lock lost: this process stops sending until it takes the lock again')
  })
})

t.test('openStore, PostgreSQL: the store at the URL the variable names, and its runner lock', { skip: postgresSkip() }, async (t) => {
  const url = await postgresDatabase(t)
  const { store, ownership } = openStore({ kind: 'postgres', url: { env: 'BRUNO_UNIT_STORE_URL' } }, { BRUNO_UNIT_STORE_URL: url })
  t.teardown(() => store.close())
  t.ok(store instanceof PostgresSubmissionStore)
  let wakes = 0
  const { log, lines } = recorder()
  const owner = ownership({ name: 'base', chainId: 8453 }, { operator: '0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65', wake: () => wakes++ }, log)
  t.teardown(() => owner.release())
  t.ok(owner instanceof PostgresRunnerLock)
  const key = 'bruno-runner:8453:0x15d34aaf54267db7d7c367839aaf71a00a2c6a65'
  t.strictSame(await owner.acquire(), { key, epoch: 1 })
  t.equal(await store.runnerEpoch(key), 1, 'raised in this store')
  t.strictSame(lines, [{ level: 'info', fields: { epoch: 1 }, message: 'runner key lock taken: this process sends for the key' }], 'logged to the log given')
  const db = await admin(t, url)
  const { rows } = await db.query<{ n: string }>(
    `SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND granted AND ((classid::bigint << 32) | objid::bigint) = $1::bigint`,
    [advisoryLockKey(key)],
  )
  t.strictSame(rows, [{ n: '1' }], 'the advisory lock on the key\'s name')
  await store.insert(submission('o-1', 'elsewhere'))
  await store.insert(submission('o-2', 'base'))
  await until(() => wakes === 1, 'the wake for base')
  t.equal(wakes, 1, 'woken for its chain\'s name only')
})
