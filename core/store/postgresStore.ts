import pg from 'pg'
import type { Address } from 'viem'
import { ActiveCapReached, AlreadySpent, PaymentIdTaken, StaleEpochError, type ActiveCaps, type PartyStanding, type RunnerFence, type Standing, type Submission, type SubmissionPatch, type SubmissionStore } from './store.ts'
import { fromRow, patchColumns, type SubmissionRow } from './storeRow.ts'
import { advisoryLockKey, SUBMISSION_CHANNEL } from './postgresRunnerLock.ts'

const SCHEMA = `
CREATE TABLE IF NOT EXISTS submissions (
  id TEXT PRIMARY KEY,
  chain TEXT NOT NULL,
  stage TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  deadline BIGINT NOT NULL,
  request TEXT NOT NULL,
  tx TEXT,
  tx_nonce BIGINT,
  block_number TEXT,
  gas_used TEXT,
  fee TEXT,
  reason TEXT
);
ALTER TABLE submissions ADD COLUMN IF NOT EXISTS outcome TEXT;
ALTER TABLE submissions ADD COLUMN IF NOT EXISTS call_gas TEXT;
ALTER TABLE submissions ADD COLUMN IF NOT EXISTS identity TEXT;
ALTER TABLE submissions ADD COLUMN IF NOT EXISTS payer TEXT;
ALTER TABLE submissions ADD COLUMN IF NOT EXISTS client TEXT;
ALTER TABLE submissions ADD COLUMN IF NOT EXISTS fault TEXT;
ALTER TABLE submissions ADD COLUMN IF NOT EXISTS payment_id TEXT;
ALTER TABLE submissions ADD COLUMN IF NOT EXISTS call_spends TEXT;
ALTER TABLE submissions ADD COLUMN IF NOT EXISTS refund_gas TEXT;
ALTER TABLE submissions ADD COLUMN IF NOT EXISTS lane TEXT;
CREATE INDEX IF NOT EXISTS submissions_payer ON submissions (payer, stage);
CREATE INDEX IF NOT EXISTS submissions_client ON submissions (client, stage);
CREATE INDEX IF NOT EXISTS submissions_active ON submissions (chain, stage, created_at);
CREATE UNIQUE INDEX IF NOT EXISTS submissions_active_identity ON submissions (identity)
  WHERE identity IS NOT NULL AND stage IN ('waiting', 'sending', 'confirming');
CREATE INDEX IF NOT EXISTS submissions_settled ON submissions (updated_at) WHERE stage IN ('done', 'failed');
CREATE INDEX IF NOT EXISTS submissions_done_identity ON submissions (identity) WHERE stage = 'done';
CREATE UNIQUE INDEX IF NOT EXISTS submissions_payment_id ON submissions (chain, payment_id) WHERE payment_id IS NOT NULL;
CREATE UNIQUE INDEX IF NOT EXISTS submissions_active_call_spends ON submissions (call_spends)
  WHERE call_spends IS NOT NULL AND stage IN ('waiting', 'sending', 'confirming');
CREATE TABLE IF NOT EXISTS runner_epochs (
  key TEXT PRIMARY KEY,
  epoch BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS runner_replicas (
  chain TEXT NOT NULL,
  replica TEXT NOT NULL,
  seen_at BIGINT NOT NULL,
  PRIMARY KEY (chain, replica)
);
`

/**
 * The shared store: one PostgreSQL database that several Bruno replicas use at once. Every write
 * is one autocommitted statement or transaction, durable when it resolves (PostgreSQL's default
 * `synchronous_commit = on`). The table is created on first use. A submission accepted by any
 * replica is announced to the one sending for its chain (LISTEN/NOTIFY), which need not wait
 * for its next poll.
 *
 * Which replica sends for a runner key is decided by `PostgresRunnerLock`; this store keeps each
 * key's epoch (`runner_epochs`), which the lock's holder raises when it takes the key, and refuses
 * runner writes carrying an older one: the lock says who should send, the epoch makes sure no one
 * else does (a holder that stalled past its session's end still believes it holds the lock).
 *
 * @example
 * const store = new PostgresSubmissionStore(process.env.BRUNO_PG_URL!)
 * await store.insert(submission)
 */
export class PostgresSubmissionStore implements SubmissionStore {
  readonly #pool: pg.Pool
  #schema: Promise<void> | undefined

  constructor(url: string) {
    this.#pool = new pg.Pool({ connectionString: url, application_name: 'bruno', max: 10 })
    // An idle pooled connection that the server drops emits 'error' on the pool; unhandled, it
    // would end the process. The pool replaces it on the next query, which reports any lasting fault.
    this.#pool.on('error', () => {})
  }

  /**
   * Also notifies `SUBMISSION_CHANNEL` with the chain's name, on commit: the replica sending for it
   * wakes at once. With `caps`, one transaction holds the payer's and then the client's advisory
   * lock (a two-key space of their own, always in that order, so two inserts never wait on each
   * other in a cycle) while it counts their active submissions and stores: concurrent submits of
   * one payer or client, on any replica, are counted one after another.
   */
  async insert(submission: Submission, caps?: ActiveCaps): Promise<Submission> {
    await this.#ensureSchema()
    const client = await this.#pool.connect()
    try {
      await client.query('BEGIN')
      const stored = await this.#insertIn(client, submission, caps)
      await client.query('COMMIT')
      client.release()
      if (stored) return stored
    } catch (error) {
      if (error instanceof ActiveCapReached || error instanceof PaymentIdTaken || error instanceof AlreadySpent) {
        await client.query('ROLLBACK')
        client.release()
      } else client.release(true) // destroyed rather than returned to the pool: closing the connection also rolls back
      // Another replica stored the same payment id first (the unique index).
      const constraint = (error as { constraint?: string }).constraint
      if (submission.paymentId !== undefined && constraint === 'submissions_payment_id') throw new PaymentIdTaken(submission.paymentId)
      // Another replica's submission spending the same call was stored first.
      if (submission.callSpends !== undefined && constraint === 'submissions_active_call_spends') throw new AlreadySpent(submission.callSpends, 'stored by another replica')
      throw error
    }
    const existing = submission.identity === undefined ? undefined : await this.activeByIdentity(submission.identity)
    if (!existing) throw new Error(`submission ${submission.id} was not stored`)
    return existing
  }

  /** The insert's transaction: the submission stored, or the active one with its identity; undefined when neither is read (a conflict). */
  async #insertIn(client: pg.PoolClient, submission: Submission, caps: ActiveCaps | undefined): Promise<Submission | undefined> {
    const parties = [
      ['payer', submission.payer, caps?.payer],
      ['client', submission.client, caps?.client],
    ] as const
    for (const [party, value, cap] of parties) {
      if (value === undefined || cap === undefined) continue
      await client.query(`SELECT pg_advisory_xact_lock(hashtext('bruno:active:${party}'), hashtext($1))`, [value])
    }
    // Under the payer's lock, a payment already active answers before its payer's cap is counted.
    if (caps !== undefined && submission.identity !== undefined) {
      const repeated = (await client.query<SubmissionRow>(`SELECT * FROM submissions WHERE identity = $1 AND stage IN ('waiting', 'sending', 'confirming')`, [submission.identity])).rows[0]
      if (repeated) return fromRow(repeated)
    }
    if (submission.paymentId !== undefined) {
      // Held by the same payment, it is that payment's (the insert below answers it); by another, taken.
      const taken = await client.query<{ identity: string | null }>(`SELECT identity FROM submissions WHERE chain = $1 AND payment_id = $2`, [submission.chain, submission.paymentId])
      if (taken.rows.some((row) => row.identity !== (submission.identity ?? null))) throw new PaymentIdTaken(submission.paymentId)
    }
    const spent = await client.query<{ id: string }>(
      // Not the same payment's own (the insert below answers that one with itself).
      `SELECT id FROM submissions WHERE stage IN ('waiting', 'sending', 'confirming') AND identity IS DISTINCT FROM $1
         AND ((call_spends IS NOT NULL AND call_spends IN ($1, $2)) OR identity = $2) LIMIT 1`,
      [submission.identity ?? null, submission.callSpends ?? null],
    )
    if (spent.rows[0]) throw new AlreadySpent(submission.callSpends ?? submission.identity ?? '', spent.rows[0].id)
    for (const [party, value, cap] of parties) {
      if (value === undefined || cap === undefined) continue
      const { rows } = await client.query<{ active: string }>(`SELECT COUNT(*) AS active FROM submissions WHERE ${party} = $1 AND stage IN ('waiting', 'sending', 'confirming')`, [value])
      const active = Number(rows[0]!.active)
      if (active >= cap) throw new ActiveCapReached(party, active)
    }
    // ON CONFLICT names the partial unique index: only an active submission with the same identity
    // is a conflict; the primary key still refuses a second insert of one id.
    const { rows } = await client.query<{ chain: string }>(
      `WITH inserted AS (
         INSERT INTO submissions (id, chain, stage, created_at, updated_at, deadline, request, call_gas, identity, payer, client, payment_id, call_spends, refund_gas) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
         ON CONFLICT (identity) WHERE identity IS NOT NULL AND stage IN ('waiting', 'sending', 'confirming') DO NOTHING
         RETURNING chain
       )
       SELECT pg_notify('${SUBMISSION_CHANNEL}', chain), chain FROM inserted`,
      [
        submission.id,
        submission.chain,
        submission.stage,
        submission.createdAt,
        submission.updatedAt,
        submission.deadline,
        JSON.stringify(submission.request),
        submission.callGas ?? null,
        submission.identity ?? null,
        submission.payer ?? null,
        submission.client ?? null,
        submission.paymentId ?? null,
        submission.callSpends ?? null,
        submission.refundGas ?? null,
      ],
    )
    return rows.length === 1 ? submission : undefined
  }

  async activeByIdentity(identity: string): Promise<Submission | undefined> {
    const row = (await this.#query<SubmissionRow>(`SELECT * FROM submissions WHERE identity = $1 AND stage IN ('waiting', 'sending', 'confirming')`, [identity]))[0]
    return row && fromRow(row)
  }

  async doneByIdentity(identity: string): Promise<Submission | undefined> {
    const row = (await this.#query<SubmissionRow>(`SELECT * FROM submissions WHERE identity = $1 AND stage = 'done' ORDER BY updated_at DESC LIMIT 1`, [identity]))[0]
    return row && fromRow(row)
  }

  async byPaymentId(chain: string, paymentId: string): Promise<Submission | undefined> {
    const row = (await this.#query<SubmissionRow>(`SELECT * FROM submissions WHERE chain = $1 AND payment_id = $2`, [chain, paymentId]))[0]
    return row && fromRow(row)
  }

  async standing(payer: string, client: string | undefined, since: number): Promise<Standing> {
    const party = async (column: 'payer' | 'client', value: string): Promise<PartyStanding> => {
      const [row] = await this.#query<{ active: string | null; faults: string | null; reverts: string | null; last: string | null }>(
        `SELECT COUNT(*) FILTER (WHERE stage IN ('waiting', 'sending', 'confirming')) AS active,
                COUNT(*) FILTER (WHERE fault IS NOT NULL AND updated_at >= $2) AS faults,
                COUNT(*) FILTER (WHERE fault = 'revert' AND updated_at >= $2) AS reverts,
                MAX(updated_at) FILTER (WHERE fault IS NOT NULL) AS last
         FROM submissions WHERE ${column} = $1`,
        [value, since],
      )
      return {
        active: Number(row?.active ?? 0),
        faults: Number(row?.faults ?? 0),
        reverts: Number(row?.reverts ?? 0),
        ...(row?.last ? { lastFaultAt: Number(row.last) } : {}),
      }
    }
    const [payerStanding, clientStanding] = await Promise.all([party('payer', payer), client === undefined ? undefined : party('client', client)])
    return { payer: payerStanding, ...(clientStanding ? { client: clientStanding } : {}) }
  }

  async prune(before: number, fence: RunnerFence): Promise<number> {
    return this.#fenced(fence, `DELETE FROM submissions WHERE stage IN ('done', 'failed') AND updated_at < $3`, [before])
  }

  async takeRunnerKey(key: string): Promise<RunnerFence> {
    // The row's update lock waits for every fenced write holding it FOR SHARE to commit.
    const [row] = await this.#query<{ epoch: string }>(
      'INSERT INTO runner_epochs (key, epoch) VALUES ($1, 1) ON CONFLICT (key) DO UPDATE SET epoch = runner_epochs.epoch + 1 RETURNING epoch',
      [key],
    )
    return { key, epoch: Number(row!.epoch) }
  }

  /** One statement: this replica's row refreshed, rows silent for a minute deleted, the live ones counted. */
  async heartbeat(chain: string, replica: string, liveMs: number): Promise<number> {
    const now = Date.now()
    const [row] = await this.#query<{ live: string }>(
      `WITH seen AS (
         INSERT INTO runner_replicas (chain, replica, seen_at) VALUES ($1, $2, $3)
         ON CONFLICT (chain, replica) DO UPDATE SET seen_at = EXCLUDED.seen_at RETURNING replica
       ), gone AS (DELETE FROM runner_replicas WHERE seen_at < $3 - 60000 RETURNING 1)
       SELECT 1 + (SELECT count(*) FROM runner_replicas WHERE chain = $1 AND replica <> $2 AND seen_at >= $4) AS live`,
      [chain, replica, now, now - liveMs],
    )
    return Number(row!.live)
  }

  async runnerEpoch(key: string): Promise<number> {
    const [row] = await this.#query<{ epoch: string }>('SELECT epoch FROM runner_epochs WHERE key = $1', [key])
    return Number(row?.epoch ?? 0)
  }

  async get(id: string): Promise<Submission | undefined> {
    const row = (await this.#query<SubmissionRow>('SELECT * FROM submissions WHERE id = $1', [id]))[0]
    return row && fromRow(row)
  }

  async active(chain: string): Promise<Submission[]> {
    // COLLATE "C": ids compare byte by byte, as SQLite compares them, whatever the database's locale.
    const rows = await this.#query<SubmissionRow>(
      `SELECT * FROM submissions WHERE chain = $1 AND stage IN ('waiting', 'sending', 'confirming') ORDER BY created_at, id COLLATE "C"`,
      [chain],
    )
    return rows.map(fromRow)
  }

  async update(id: string, patch: SubmissionPatch, fence: RunnerFence): Promise<void> {
    const columns = patchColumns(patch, Date.now())
    // Column names come from patchColumns' fixed set; only values are parameters.
    const names = Object.keys(columns)
    const sets = names.map((name, index) => `${name} = $${index + 4}`).join(', ')
    await this.#fenced(fence, `UPDATE submissions SET ${sets} WHERE id = $3`, [id, ...names.map((name) => columns[name])])
  }

  async highestNonce(chain: string, lane: Address, first: boolean): Promise<number | undefined> {
    const row = (
      await this.#query<{ nonce: string | null }>(
        `SELECT MAX(tx_nonce) AS nonce FROM submissions WHERE chain = $1 AND (lane = $2 OR ($3 AND lane IS NULL)) AND (stage <> 'failed' OR block_number IS NOT NULL)`,
        [chain, lane.toLowerCase(), first],
      )
    )[0]
    return row?.nonce == null ? undefined : Number(row.nonce)
  }

  /**
   * Under the payer's advisory lock (the insert's, so a claim and a capped insert of one payer are
   * serialized too), in one transaction: the fenced, conditional UPDATE is a statement of its own,
   * after the lock, so it reads what another replica's claim of the same payer committed.
   */
  async claim(id: string, patch: SubmissionPatch, fence: RunnerFence): Promise<boolean> {
    await this.#ensureSchema()
    const columns = patchColumns(patch, Date.now())
    const names = Object.keys(columns)
    const sets = names.map((name, index) => `${name} = $${index + 4}`).join(', ')
    const client = await this.#pool.connect()
    try {
      await client.query('BEGIN')
      const payer = (await client.query<{ payer: string | null }>('SELECT payer FROM submissions WHERE id = $1', [id])).rows[0]?.payer
      if (payer) await client.query(`SELECT pg_advisory_xact_lock(hashtext('bruno:active:payer'), hashtext($1))`, [payer])
      const changed = await this.#fencedIn(
        client,
        fence,
        `UPDATE submissions SET ${sets} WHERE id = $3 AND stage = 'waiting' AND tx IS NULL
           AND NOT EXISTS (SELECT 1 FROM submissions other WHERE other.payer = submissions.payer AND other.id <> submissions.id AND other.stage IN ('sending', 'confirming'))`,
        [id, ...names.map((name) => columns[name])],
      )
      await client.query('COMMIT')
      client.release()
      return changed === 1
    } catch (error) {
      // Destroyed rather than returned to the pool: closing the connection also rolls back.
      client.release(true)
      throw error
    }
  }

  async ping(): Promise<boolean> {
    return (await this.#query<{ ok: number }>('SELECT 1 AS ok'))[0]?.ok === 1
  }

  async close(): Promise<void> {
    await this.#pool.end()
  }

  /**
   * Runs `write` (an UPDATE or DELETE ending in its WHERE clause, its parameters from `$3`) only if
   * `fence` is its key's latest epoch, and says how many rows it changed; else throws
   * `StaleEpochError`. One statement: the epoch's row is read FOR SHARE, so a takeover (which
   * updates that row) waits for this write to commit, and a write that waited for a takeover to
   * commit reads the new epoch (the row's latest version, not the statement's snapshot) and
   * changes nothing.
   */
  async #fenced(fence: RunnerFence, write: string, values: unknown[]): Promise<number> {
    await this.#ensureSchema()
    return this.#fencedIn(this.#pool, fence, write, values)
  }

  /** `#fenced` on `client`: the pool, or a connection inside a transaction. */
  async #fencedIn(client: pg.Pool | pg.PoolClient, fence: RunnerFence, write: string, values: unknown[]): Promise<number> {
    const { rows } = await client.query<{ epoch: string | null; changed: string }>(
      `WITH owner AS (SELECT epoch FROM runner_epochs WHERE key = $1 FOR SHARE),
            written AS (${write} AND (SELECT epoch FROM owner) = $2 RETURNING 1)
       SELECT (SELECT epoch FROM owner) AS epoch, (SELECT count(*) FROM written) AS changed`,
      [fence.key, fence.epoch, ...values],
    )
    const row = rows[0]
    const current = Number(row?.epoch ?? 0)
    if (current !== fence.epoch) throw new StaleEpochError(fence, current)
    return Number(row!.changed)
  }

  async #query<R extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<R[]> {
    await this.#ensureSchema()
    return (await this.#pool.query<R>(text, values)).rows
  }

  /** Creates the table once per process; retried on the next query if the database was down. */
  #ensureSchema(): Promise<void> {
    this.#schema ??= this.#createSchema().catch((error: unknown) => {
      this.#schema = undefined
      throw error
    })
    return this.#schema
  }

  async #createSchema(): Promise<void> {
    const client = await this.#pool.connect()
    try {
      // Replicas starting together would race on CREATE TABLE IF NOT EXISTS (a duplicate-key
      // error on the catalog): a transaction-scoped advisory lock lets one create, then the rest see it.
      await client.query('BEGIN')
      await client.query('SELECT pg_advisory_xact_lock($1)', [advisoryLockKey('bruno:schema')])
      await client.query(SCHEMA)
      await client.query('COMMIT')
      client.release()
    } catch (error) {
      // Destroyed rather than returned to the pool: closing the connection also rolls back.
      client.release(true)
      throw error
    }
  }
}
