import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import Database from 'better-sqlite3'
import type { Address } from 'viem'
import type { StoreLock } from './sqliteLock.ts'
import { ActiveCapReached, AlreadySpent, PaymentIdTaken, StaleEpochError, type ActiveCaps, type PartyStanding, type RunnerFence, type Standing, type Submission, type SubmissionPatch, type SubmissionStore } from './store.ts'
import { fromRow, patchColumns, type SubmissionRow } from './storeRow.ts'

const SCHEMA = `
CREATE TABLE IF NOT EXISTS submissions (
  id TEXT PRIMARY KEY,
  chain TEXT NOT NULL,
  stage TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  deadline INTEGER NOT NULL,
  request TEXT NOT NULL,
  tx TEXT,
  tx_nonce INTEGER,
  block_number TEXT,
  gas_used TEXT,
  fee TEXT,
  reason TEXT,
  outcome TEXT,
  call_gas TEXT,
  identity TEXT,
  payer TEXT,
  client TEXT,
  fault TEXT,
  payment_id TEXT,
  call_spends TEXT,
  refund_gas TEXT,
  lane TEXT
);
CREATE INDEX IF NOT EXISTS submissions_active ON submissions (chain, stage, created_at);
CREATE TABLE IF NOT EXISTS runner_epochs (
  key TEXT PRIMARY KEY,
  epoch INTEGER NOT NULL
);
`

// After the columns a file made before them gains: one active submission per payment identity, one submission per payment id.
const IDENTITY_INDEX = `
CREATE UNIQUE INDEX IF NOT EXISTS submissions_active_identity ON submissions (identity)
  WHERE identity IS NOT NULL AND stage IN ('waiting', 'sending', 'confirming');
CREATE INDEX IF NOT EXISTS submissions_settled ON submissions (updated_at) WHERE stage IN ('done', 'failed');
CREATE INDEX IF NOT EXISTS submissions_payer ON submissions (payer, stage);
CREATE INDEX IF NOT EXISTS submissions_client ON submissions (client, stage);
CREATE INDEX IF NOT EXISTS submissions_done_identity ON submissions (identity) WHERE stage = 'done';
CREATE UNIQUE INDEX IF NOT EXISTS submissions_payment_id ON submissions (chain, payment_id) WHERE payment_id IS NOT NULL;
CREATE UNIQUE INDEX IF NOT EXISTS submissions_active_call_spends ON submissions (call_spends)
  WHERE call_spends IS NOT NULL AND stage IN ('waiting', 'sending', 'confirming');
`

/**
 * The embedded store: one SQLite file (WAL, synchronous FULL), or `:memory:` for throwaway runs.
 * One process uses it, so that process owns every chain's runner key: the relay opens it holding
 * the file's lock (`lockSqliteStore`, in `openStore`), which `close()` gives up. It fences runner
 * writes all the same (`RunnerFence`), so the runner has one path whichever store it writes to.
 *
 * @example
 * const store = new SqliteSubmissionStore('.bruno/bruno.sqlite', lockSqliteStore('.bruno/bruno.sqlite'))
 */
export class SqliteSubmissionStore implements SubmissionStore {
  readonly #db: Database.Database
  readonly #insert: Database.Statement
  readonly #insertCapped: Database.Transaction<(submission: Submission, caps: ActiveCaps | undefined) => Submission>
  readonly #activeOf: Record<'payer' | 'client', Database.Statement<[string], { active: number }>>
  readonly #get: Database.Statement<[string], SubmissionRow>
  readonly #active: Database.Statement<[string], SubmissionRow>
  readonly #highestNonce: Database.Statement<[{ chain: string; lane: string; first: number }], { nonce: number | null }>
  readonly #payerInFlight: Database.Statement<[{ id: string; payer: string | null }], { id: string }>
  readonly #byIdentity: Database.Statement<[string], SubmissionRow>
  readonly #doneByIdentity: Database.Statement<[string], SubmissionRow>
  readonly #byPaymentId: Database.Statement<[string, string], SubmissionRow>
  readonly #spentBy: Database.Statement<[{ identity: string | null; callSpends: string | null }], { id: string }>
  readonly #prune: Database.Statement<[number]>
  readonly #takeRunnerKey: Database.Statement<[string], { epoch: number }>
  readonly #runnerEpoch: Database.Statement<[string], { epoch: number }>
  readonly #fenced: Database.Transaction<(fence: RunnerFence, write: () => number) => number>
  readonly #lock: StoreLock | undefined

  /** `lock`, when given, is released on `close()`. */
  constructor(path: string, lock?: StoreLock) {
    this.#lock = lock
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true })
    this.#db = new Database(path)
    this.#db.pragma('journal_mode = WAL')
    this.#db.pragma('synchronous = FULL')
    this.#db.exec(SCHEMA)
    // A file made before payment-first relays gains their columns.
    const columns = this.#db.prepare<[], { name: string }>('PRAGMA table_info(submissions)').all()
    for (const name of ['outcome', 'call_gas', 'identity', 'payer', 'client', 'fault', 'payment_id', 'call_spends', 'refund_gas', 'lane']) {
      if (!columns.some((column) => column.name === name)) this.#db.exec(`ALTER TABLE submissions ADD COLUMN ${name} TEXT`)
    }
    this.#db.exec(IDENTITY_INDEX)
    // OR IGNORE: a used id is answered by the caller's own words (the identity is read first, in the same transaction).
    this.#insert = this.#db.prepare(
      `INSERT OR IGNORE INTO submissions (id, chain, stage, created_at, updated_at, deadline, request, call_gas, refund_gas, identity, payer, client, payment_id, call_spends)
       VALUES (@id, @chain, @stage, @createdAt, @updatedAt, @deadline, @request, @callGas, @refundGas, @identity, @payer, @client, @paymentId, @callSpends)`,
    )
    this.#byIdentity = this.#db.prepare("SELECT * FROM submissions WHERE identity = ? AND stage IN ('waiting', 'sending', 'confirming')")
    this.#doneByIdentity = this.#db.prepare("SELECT * FROM submissions WHERE identity = ? AND stage = 'done' ORDER BY updated_at DESC LIMIT 1")
    this.#byPaymentId = this.#db.prepare('SELECT * FROM submissions WHERE chain = ? AND payment_id = ?')
    this.#spentBy = this.#db.prepare(
      "SELECT id FROM submissions WHERE stage IN ('waiting', 'sending', 'confirming') AND identity IS NOT @identity AND ((call_spends IS NOT NULL AND call_spends IN (@identity, @callSpends)) OR identity = @callSpends) LIMIT 1",
    )
    this.#activeOf = {
      payer: this.#db.prepare("SELECT COUNT(*) AS active FROM submissions WHERE payer = ? AND stage IN ('waiting', 'sending', 'confirming')"),
      client: this.#db.prepare("SELECT COUNT(*) AS active FROM submissions WHERE client = ? AND stage IN ('waiting', 'sending', 'confirming')"),
    }
    // Begun IMMEDIATE (holding the write lock): the caps' counts and the insert see one state.
    this.#insertCapped = this.#db.transaction((submission, caps) => {
      const repeated = submission.identity === undefined ? undefined : this.#byIdentity.get(submission.identity)
      if (repeated) return fromRow(repeated)
      const capped = (party: 'payer' | 'client', value: string | undefined, cap: number | undefined) => {
        if (value === undefined || cap === undefined) return
        const { active } = this.#activeOf[party].get(value)!
        if (active >= cap) throw new ActiveCapReached(party, active)
      }
      capped('payer', submission.payer, caps?.payer)
      capped('client', submission.client, caps?.client)
      if (submission.paymentId !== undefined && this.#byPaymentId.get(submission.chain, submission.paymentId)) throw new PaymentIdTaken(submission.paymentId)
      const spent = this.#spentBy.get({ identity: submission.identity ?? null, callSpends: submission.callSpends ?? null })
      if (spent) throw new AlreadySpent(submission.callSpends ?? submission.identity ?? '', spent.id)
      const row = {
        ...submission,
        request: JSON.stringify(submission.request),
        callGas: submission.callGas ?? null,
        refundGas: submission.refundGas ?? null,
        identity: submission.identity ?? null,
        payer: submission.payer ?? null,
        client: submission.client ?? null,
        paymentId: submission.paymentId ?? null,
        callSpends: submission.callSpends ?? null,
      }
      // The primary key still refuses a second insert of one id.
      if (this.#insert.run(row).changes === 1) return submission
      throw new Error(`submission ${submission.id} already exists`)
    })
    this.#prune = this.#db.prepare("DELETE FROM submissions WHERE stage IN ('done', 'failed') AND updated_at < ?")
    this.#get = this.#db.prepare('SELECT * FROM submissions WHERE id = ?')
    this.#active = this.#db.prepare(
      "SELECT * FROM submissions WHERE chain = ? AND stage IN ('waiting', 'sending', 'confirming') ORDER BY created_at, id",
    )
    this.#takeRunnerKey = this.#db.prepare('INSERT INTO runner_epochs (key, epoch) VALUES (?, 1) ON CONFLICT (key) DO UPDATE SET epoch = epoch + 1 RETURNING epoch')
    this.#runnerEpoch = this.#db.prepare('SELECT epoch FROM runner_epochs WHERE key = ?')
    // The epoch is checked and the write made in one transaction, begun IMMEDIATE (holding the
    // write lock), so a takeover by another connection falls wholly before or after it.
    this.#fenced = this.#db.transaction((fence, write) => {
      const current = this.#runnerEpoch.get(fence.key)?.epoch ?? 0
      if (current !== fence.epoch) throw new StaleEpochError(fence, current)
      return write()
    })
    this.#highestNonce = this.#db.prepare(
      "SELECT MAX(tx_nonce) AS nonce FROM submissions WHERE chain = @chain AND (lane = @lane OR (@first = 1 AND lane IS NULL)) AND (stage <> 'failed' OR block_number IS NOT NULL)",
    )
    this.#payerInFlight = this.#db.prepare("SELECT id FROM submissions WHERE payer = @payer AND id <> @id AND stage IN ('sending', 'confirming') LIMIT 1")
  }

  async insert(submission: Submission, caps?: ActiveCaps): Promise<Submission> {
    return this.#insertCapped.immediate(submission, caps)
  }

  async activeByIdentity(identity: string): Promise<Submission | undefined> {
    const row = this.#byIdentity.get(identity)
    return row && fromRow(row)
  }

  async doneByIdentity(identity: string): Promise<Submission | undefined> {
    const row = this.#doneByIdentity.get(identity)
    return row && fromRow(row)
  }

  async byPaymentId(chain: string, paymentId: string): Promise<Submission | undefined> {
    const row = this.#byPaymentId.get(chain, paymentId)
    return row && fromRow(row)
  }

  async prune(before: number, fence: RunnerFence): Promise<number> {
    return this.#fenced.immediate(fence, () => this.#prune.run(before).changes)
  }

  async takeRunnerKey(key: string): Promise<RunnerFence> {
    return { key, epoch: this.#takeRunnerKey.get(key)!.epoch }
  }

  async runnerEpoch(key: string): Promise<number> {
    return this.#runnerEpoch.get(key)?.epoch ?? 0
  }

  async standing(payer: string, client: string | undefined, since: number): Promise<Standing> {
    const party = (column: 'payer' | 'client', value: string): PartyStanding => {
      const row = this.#db
        .prepare<[{ value: string; since: number }], { active: number | null; faults: number | null; reverts: number | null; last: number | null }>(
          `SELECT SUM(stage IN ('waiting', 'sending', 'confirming')) AS active,
                  SUM(fault IS NOT NULL AND updated_at >= @since) AS faults,
                  SUM(fault = 'revert' AND updated_at >= @since) AS reverts,
                  MAX(CASE WHEN fault IS NOT NULL THEN updated_at END) AS last
           FROM submissions WHERE ${column} = @value`,
        )
        .get({ value, since })
      return { active: row?.active ?? 0, faults: row?.faults ?? 0, reverts: row?.reverts ?? 0, ...(row?.last ? { lastFaultAt: row.last } : {}) }
    }
    return { payer: party('payer', payer), ...(client === undefined ? {} : { client: party('client', client) }) }
  }

  async get(id: string): Promise<Submission | undefined> {
    const row = this.#get.get(id)
    return row && fromRow(row)
  }

  async active(chain: string): Promise<Submission[]> {
    return this.#active.all(chain).map(fromRow)
  }

  async update(id: string, patch: SubmissionPatch, fence: RunnerFence): Promise<void> {
    const columns = patchColumns(patch, Date.now())
    const names = Object.keys(columns)
    const statement = this.#db.prepare(`UPDATE submissions SET ${names.map((name) => `${name} = @${name}`).join(', ')} WHERE id = @id`)
    this.#fenced.immediate(fence, () => statement.run({ ...columns, id }).changes)
  }

  async highestNonce(chain: string, lane: Address, first: boolean): Promise<number | undefined> {
    return this.#highestNonce.get({ chain, lane: lane.toLowerCase(), first: first ? 1 : 0 })?.nonce ?? undefined
  }

  /** One process uses the file: it is the only replica. */
  async heartbeat(): Promise<number> {
    return 1
  }

  async claim(id: string, patch: SubmissionPatch, fence: RunnerFence): Promise<boolean> {
    const columns = patchColumns(patch, Date.now())
    const statement = this.#db.prepare(`UPDATE submissions SET ${Object.keys(columns).map((name) => `${name} = @${name}`).join(', ')} WHERE id = @id AND stage = 'waiting' AND tx IS NULL`)
    // One IMMEDIATE transaction holds the write lock: the payer's other transactions are read and the send stored in one state.
    return this.#fenced.immediate(fence, () => {
      const row = this.#get.get(id)
      if (row?.payer && this.#payerInFlight.get({ id, payer: row.payer })) return 0
      return statement.run({ ...columns, id }).changes
    }) === 1
  }

  async ping(): Promise<boolean> {
    return this.#db.prepare('SELECT 1 AS ok').get() !== undefined
  }

  async close(): Promise<void> {
    this.#db.close()
    this.#lock?.release()
  }
}
