import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import Database from 'better-sqlite3'
import type { Hex } from 'viem'
import type { Stage, SubmitRequest } from './schemas.ts'

/** The runner's transaction for a submission, stored signed *before* it is broadcast. */
export interface SentTransaction {
  readonly hash: Hex
  readonly nonce: number
  /** The signed bytes: rebroadcast as they are after a restart, so nothing is ever sent twice. */
  readonly raw: Hex
  readonly maxFeePerGas: string
  readonly maxPriorityFeePerGas: string
  readonly gas: string
  /** unix ms of the (latest) broadcast */
  readonly sentAt: number
  /** every hash sent for this nonce, replacements included, oldest first */
  readonly hashes: readonly Hex[]
}

export interface Submission {
  readonly id: string
  readonly chain: string
  readonly stage: Stage
  readonly createdAt: number
  readonly updatedAt: number
  /** unix seconds */
  readonly deadline: number
  readonly request: SubmitRequest
  readonly transaction?: SentTransaction
  readonly blockNumber?: string
  readonly gasUsed?: string
  readonly fee?: string
  readonly reason?: string
}

export type SubmissionPatch = Partial<Pick<Submission, 'stage' | 'transaction' | 'blockNumber' | 'gasUsed' | 'fee' | 'reason'>>

/**
 * Where submissions live. Every write is durable when its promise resolves: a submission
 * acknowledged to a caller survives a crash of the process (kill -9 included).
 */
export interface SubmissionStore {
  insert(submission: Submission): Promise<void>
  get(id: string): Promise<Submission | undefined>
  /** The chain's submissions not yet done or failed, oldest first. */
  active(chain: string): Promise<Submission[]>
  update(id: string, patch: SubmissionPatch): Promise<void>
  /** The highest runner nonce stored for the chain, if any. */
  highestNonce(chain: string): Promise<number | undefined>
  /** Whether the store answers (for health checks). */
  ping(): Promise<boolean>
  close(): Promise<void>
}

interface Row {
  id: string
  chain: string
  stage: Stage
  created_at: number
  updated_at: number
  deadline: number
  request: string
  tx: string | null
  block_number: string | null
  gas_used: string | null
  fee: string | null
  reason: string | null
}

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
  reason TEXT
);
CREATE INDEX IF NOT EXISTS submissions_active ON submissions (chain, stage, created_at);
`

/**
 * The embedded store: one SQLite file (WAL, synchronous FULL), or `:memory:` for throwaway runs.
 *
 * @example
 * const store = new SqliteSubmissionStore('.bruno/bruno.sqlite')
 */
export class SqliteSubmissionStore implements SubmissionStore {
  readonly #db: Database.Database
  readonly #insert: Database.Statement
  readonly #get: Database.Statement<[string], Row>
  readonly #active: Database.Statement<[string], Row>
  readonly #highestNonce: Database.Statement<[string], { nonce: number | null }>

  constructor(path: string) {
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true })
    this.#db = new Database(path)
    this.#db.pragma('journal_mode = WAL')
    this.#db.pragma('synchronous = FULL')
    this.#db.exec(SCHEMA)
    this.#insert = this.#db.prepare(
      `INSERT INTO submissions (id, chain, stage, created_at, updated_at, deadline, request)
       VALUES (@id, @chain, @stage, @createdAt, @updatedAt, @deadline, @request)`,
    )
    this.#get = this.#db.prepare('SELECT * FROM submissions WHERE id = ?')
    this.#active = this.#db.prepare(
      "SELECT * FROM submissions WHERE chain = ? AND stage IN ('waiting', 'sending', 'confirming') ORDER BY created_at, id",
    )
    this.#highestNonce = this.#db.prepare('SELECT MAX(tx_nonce) AS nonce FROM submissions WHERE chain = ?')
  }

  async insert(submission: Submission): Promise<void> {
    this.#insert.run({ ...submission, request: JSON.stringify(submission.request) })
  }

  async get(id: string): Promise<Submission | undefined> {
    const row = this.#get.get(id)
    return row && fromRow(row)
  }

  async active(chain: string): Promise<Submission[]> {
    return this.#active.all(chain).map(fromRow)
  }

  async update(id: string, patch: SubmissionPatch): Promise<void> {
    const columns: Record<string, unknown> = { updated_at: Date.now() }
    if (patch.stage !== undefined) columns.stage = patch.stage
    if (patch.transaction !== undefined) {
      columns.tx = JSON.stringify(patch.transaction)
      columns.tx_nonce = patch.transaction.nonce
    }
    if (patch.blockNumber !== undefined) columns.block_number = patch.blockNumber
    if (patch.gasUsed !== undefined) columns.gas_used = patch.gasUsed
    if (patch.fee !== undefined) columns.fee = patch.fee
    if (patch.reason !== undefined) columns.reason = patch.reason
    const names = Object.keys(columns)
    this.#db.prepare(`UPDATE submissions SET ${names.map((name) => `${name} = @${name}`).join(', ')} WHERE id = @id`).run({ ...columns, id })
  }

  async highestNonce(chain: string): Promise<number | undefined> {
    return this.#highestNonce.get(chain)?.nonce ?? undefined
  }

  async ping(): Promise<boolean> {
    return this.#db.prepare('SELECT 1 AS ok').get() !== undefined
  }

  async close(): Promise<void> {
    this.#db.close()
  }
}

function fromRow(row: Row): Submission {
  return {
    id: row.id,
    chain: row.chain,
    stage: row.stage,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    deadline: row.deadline,
    request: JSON.parse(row.request) as SubmitRequest,
    ...(row.tx ? { transaction: JSON.parse(row.tx) as SentTransaction } : {}),
    ...(row.block_number ? { blockNumber: row.block_number } : {}),
    ...(row.gas_used ? { gasUsed: row.gas_used } : {}),
    ...(row.fee ? { fee: row.fee } : {}),
    ...(row.reason ? { reason: row.reason } : {}),
  }
}
