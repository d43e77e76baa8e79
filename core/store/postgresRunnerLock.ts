import type { FastifyBaseLogger } from 'fastify'
import { hostname } from 'node:os'
import pg from 'pg'
import { keccak256, stringToHex } from 'viem'
import type { RunnerOwnership } from './ownership.ts'
import type { RunnerFence, SubmissionStore } from './store.ts'

/** How often the holder proves its session alive, and how long it waits for the answer. */
const HEARTBEAT_MS = 1_000
const HEARTBEAT_TIMEOUT_MS = 2_000
/**
 * The server ends a lock session silent for this long (a frozen process, a dead host, a network
 * partition), which frees the lock for another replica. It exceeds the holder's own give-up time
 * (the last heartbeat + HEARTBEAT_MS + HEARTBEAT_TIMEOUT_MS), so the holder stops sending first.
 */
const SESSION_IDLE_TIMEOUT_MS = 5_000

/** The channel `PostgresSubmissionStore` announces each new submission on (payload: its chain's name). */
export const SUBMISSION_CHANNEL = 'bruno_submission'

/**
 * A 64-bit advisory lock key for a name (the first 8 bytes of its keccak-256, signed, as the
 * decimal string `pg` passes for a BIGINT).
 *
 * @example
 * advisoryLockKey('bruno-runner:8453:0x15d34aaf54267db7d7c367839aaf71a00a2c6a65') // '-3510410603068101228'
 */
export function advisoryLockKey(name: string): string {
  return BigInt.asIntN(64, BigInt(keccak256(stringToHex(name)).slice(0, 18))).toString()
}

/** What a lock does with its session's events (`PostgresLockSession`). */
interface SessionMember {
  /** The session `client` ended (closed, failed, or silent past its heartbeat's timeout). */
  lost(client: pg.Client, error?: unknown): void
  /** A submission was announced for the chain `payload` names. */
  announced(payload: string | undefined): void
}

/**
 * One PostgreSQL session for a process's runner-key locks: every lane's advisory lock lives on it,
 * so a replica holds one connection for its locks however many lanes it tries, where a session per
 * lock held one each. The session lives while a lock uses it: connected at the first `client()`,
 * ended when the last lock leaves (which frees whatever it still holds), and when it is lost
 * (closed, failed, or its heartbeat unanswered) every lock on it is told, and the next `client()`
 * connects afresh. It listens for new submissions (`SUBMISSION_CHANNEL`) for all its locks, and
 * ends after `SESSION_IDLE_TIMEOUT_MS` of silence on the server's side, as one lock's own did.
 *
 * @example
 * const session = new PostgresLockSession(url)
 * const first = new PostgresRunnerLock(url, { name: runnerKeyName(8453, lane1), chain: 'base', onSubmission: wake, epochs: store, session }, log)
 * const second = new PostgresRunnerLock(url, { name: runnerKeyName(8453, lane2), chain: 'base', onSubmission: wake, epochs: store, session }, log)
 */
export class PostgresLockSession {
  readonly #url: string
  readonly #members = new Set<SessionMember>()
  #client: pg.Client | undefined
  #connecting: Promise<pg.Client> | undefined
  #heartbeat: NodeJS.Timeout | undefined

  constructor(url: string) {
    this.#url = url
  }

  /** The session's connection now, or undefined while it has none. */
  get current(): pg.Client | undefined {
    return this.#client
  }

  /** The connection, made now if there is none (`member` joins the session, until it `leave`s). */
  async client(member: SessionMember): Promise<pg.Client> {
    this.#members.add(member)
    if (this.#client) return this.#client
    this.#connecting ??= this.#connect().finally(() => {
      this.#connecting = undefined
    })
    return this.#connecting
  }

  /** `member` no longer uses the session; with no member left, the session ends. */
  async leave(member: SessionMember): Promise<void> {
    this.#members.delete(member)
    if (this.#members.size > 0) return
    const client = this.#client
    this.#drop()
    // Ending the session releases any advisory lock still on it.
    await client?.end().catch(() => {})
  }

  async #connect(): Promise<pg.Client> {
    // Named by host and PID: a replica standing by says whom it waits for.
    const client = new pg.Client({ connectionString: this.#url, application_name: `bruno-runner-lock ${hostname()}:${process.pid}`.slice(0, 63), keepAlive: true, query_timeout: HEARTBEAT_TIMEOUT_MS })
    // Unhandled, a dropped connection's 'error' would end the process; here it ends the ownership.
    client.on('error', (error) => this.#lost(client, error))
    client.on('end', () => this.#lost(client))
    client.on('notification', (message) => {
      for (const member of this.#members) member.announced(message.payload)
    })
    try {
      await client.connect()
      await client.query(`SET idle_session_timeout = ${SESSION_IDLE_TIMEOUT_MS}`)
      await client.query(`LISTEN ${SUBMISSION_CHANNEL}`)
    } catch (error) {
      await client.end().catch(() => {})
      throw error
    }
    this.#client = client
    this.#heartbeat = setInterval(() => client.query('SELECT 1').catch((error: unknown) => this.#lost(client, error)), HEARTBEAT_MS)
    return client
  }

  #lost(client: pg.Client, error?: unknown): void {
    if (client !== this.#client) return
    this.#drop()
    client.end().catch(() => {})
    for (const member of this.#members) member.lost(client, error)
  }

  #drop(): void {
    clearInterval(this.#heartbeat)
    this.#heartbeat = undefined
    this.#client = undefined
  }
}

/**
 * Runner-key ownership among replicas sharing one PostgreSQL: a session-level advisory lock, on
 * the process's lock session (`PostgresLockSession`, shared by its lanes' locks; one of its own
 * when none is given). The lock lives exactly as long as that session: when the process
 * dies its connection closes and the server frees the lock at once; a holder that goes silent
 * (frozen, partitioned, its host gone) has its session ended by `idle_session_timeout` (PostgreSQL
 * 14+), and stops sending by itself when its heartbeat goes unanswered. A waiting replica tries
 * the lock on every runner pass, so it takes over within one poll of the holder's end.
 *
 * A holder frozen mid-send cannot notice anything until it wakes, still believing it holds the
 * lock: so whoever takes the lock then raises the key's epoch in the store (`epochs`), and answers
 * with that fence. The store refuses the old holder's writes, and it stores every transaction
 * before broadcasting it, so the old holder's sends never happen.
 *
 * The session listens for new submissions (`SUBMISSION_CHANNEL`): while it holds the key,
 * one accepted by any replica for its chain calls `onSubmission` (the runner's wake) at once.
 *
 * The connection must reach PostgreSQL itself or a session-mode pooler: a transaction-mode pooler
 * (PgBouncer's default) would hand the session, and the lock, to other clients.
 *
 * @example
 * const lock = new PostgresRunnerLock(url, { name: runnerKeyName(chainId, operator), chain: 'base', onSubmission: wake, epochs: store }, log)
 * const fence = await lock.acquire()
 * if (fence) await store.update(id, patch, fence)
 */
export class PostgresRunnerLock implements RunnerOwnership {
  readonly #name: string
  readonly #key: string
  readonly #log: FastifyBaseLogger
  readonly #chain: string
  readonly #onSubmission: () => void
  readonly #epochs: Pick<SubmissionStore, 'takeRunnerKey'>
  readonly #session: PostgresLockSession
  readonly #member: SessionMember
  /** The session connection this lock's state belongs to (its lock, if held, is on it). */
  #client: pg.Client | undefined
  /** Whether this session holds the advisory lock. */
  #locked = false
  /** This tenure's fence: set once the lock is held and the key's epoch raised. */
  #fence: RunnerFence | undefined
  /** Whether this process has said it stands by (said once per wait, not every pass). */
  #standingBy = false

  /**
   * `name` identifies the key (the lock's key is derived from it, and the epoch is kept under it);
   * `chain` is the chain's configured name; `epochs` is the store whose writes the fence guards;
   * `session`, the process's lock session its lanes share (default: one of this lock's own).
   */
  constructor(
    url: string,
    lock: { name: string; chain: string; onSubmission: () => void; epochs: Pick<SubmissionStore, 'takeRunnerKey'>; session?: PostgresLockSession },
    log: FastifyBaseLogger,
  ) {
    this.#name = lock.name
    this.#key = advisoryLockKey(lock.name)
    this.#epochs = lock.epochs
    this.#chain = lock.chain
    this.#onSubmission = lock.onSubmission
    this.#session = lock.session ?? new PostgresLockSession(url)
    this.#log = log
    this.#member = {
      lost: (client, error) => this.#lost(client, error),
      announced: (payload) => {
        if (this.#fence && payload === this.#chain) this.#onSubmission()
      },
    }
  }

  async acquire(): Promise<RunnerFence | undefined> {
    if (this.#fence) return this.#fence
    if (!this.#locked) {
      const client = await this.#session.client(this.#member)
      this.#client = client
      const { rows } = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1) AS locked', [this.#key])
      // The session may have been lost while the answer was on its way: then the lock went with it.
      const granted = rows[0]?.locked === true
      this.#locked = granted && this.#client === client && this.#session.current === client
      if (!this.#locked) {
        // Held by another (not this session lost on the way): said once per wait.
        if (!granted && !this.#standingBy) await this.#sayStandingBy(client)
        return undefined
      }
    }
    this.#standingBy = false
    // Kept locked if this fails (the store unreachable): the next pass raises the epoch again.
    const fence = await this.#epochs.takeRunnerKey(this.#name)
    // Lost meanwhile: this epoch goes unused. (A replica that took the lock and its epoch before
    // this one has its writes refused: it stands down and takes the key afresh.)
    if (!this.#locked) return undefined
    this.#fence = fence
    this.#log.info({ epoch: fence.epoch }, 'runner key lock taken: this process sends for the key')
    return fence
  }

  held(): boolean {
    return this.#fence !== undefined
  }

  async release(): Promise<void> {
    const client = this.#client
    const locked = this.#locked
    this.#drop()
    // Another lock's session too: this key alone is unlocked (a lost session freed it already).
    if (locked && client && this.#session.current === client) await client.query('SELECT pg_advisory_unlock($1)', [this.#key]).catch(() => {})
    await this.#session.leave(this.#member)
  }

  /** One line when this process starts waiting: the chain, the key, and who holds it (its host and PID, from the holder's session name). */
  async #sayStandingBy(client: pg.Client): Promise<void> {
    this.#standingBy = true
    // The key as pg_locks shows a BIGINT advisory lock: its high 32 bits in classid, its low in objid.
    const key = BigInt.asUintN(64, BigInt(this.#key))
    const { rows } = await client
      .query<{ holder: string; since: Date }>(
        // Advisory locks belong to a database: another database's holder of the same key (another deployment) is not ours.
        "SELECT a.application_name AS holder, a.backend_start AS since FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted AND l.classid = $1 AND l.objid = $2 AND l.objsubid = 1 AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())",
        [(key >> 32n).toString(), (key & 0xffffffffn).toString()],
      )
      .catch(() => ({ rows: [] }))
    const holder = rows[0]?.holder.replace(/^bruno-runner-lock /, '')
    this.#log.info(
      { key: this.#name, holder, holderSince: rows[0]?.since },
      `standing by: ${holder ? `the Bruno at ${holder}` : 'another process'} holds the runner key for ${this.#chain}; this one takes it over when that one stops or goes silent`,
    )
  }

  #lost(client: pg.Client, error?: unknown): void {
    if (client !== this.#client) return
    const locked = this.#locked
    this.#drop()
    if (locked) this.#log.warn({ err: error }, 'runner key lock lost: this process stops sending until it takes the lock again')
  }

  #drop(): void {
    this.#client = undefined
    this.#locked = false
    this.#fence = undefined
  }
}
