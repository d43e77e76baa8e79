import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import Database from 'better-sqlite3'
import type { Submission, SubmissionPatch, SubmissionStore } from './store.ts'
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
  call_gas TEXT
);
CREATE INDEX IF NOT EXISTS submissions_active ON submissions (chain, stage, created_at);
`

/**
 * The embedded store: one SQLite file (WAL, synchronous FULL), or `:memory:` for throwaway runs.
 * One process uses it, so that process owns every chain's runner key.
 *
 * @example
 * const store = new SqliteSubmissionStore('.bruno/bruno.sqlite')
 */
export class SqliteSubmissionStore implements SubmissionStore {
  readonly #db: Database.Database
  readonly #insert: Database.Statement
  readonly #get: Database.Statement<[string], SubmissionRow>
  readonly #active: Database.Statement<[string], SubmissionRow>
  readonly #highestNonce: Database.Statement<[string], { nonce: number | null }>

  constructor(path: string) {
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true })
    this.#db = new Database(path)
    this.#db.pragma('journal_mode = WAL')
    this.#db.pragma('synchronous = FULL')
    this.#db.exec(SCHEMA)
    // A file made before payment-first relays gains their columns.
    const columns = this.#db.prepare<[], { name: string }>('PRAGMA table_info(submissions)').all()
    for (const name of ['outcome', 'call_gas']) {
      if (!columns.some((column) => column.name === name)) this.#db.exec(`ALTER TABLE submissions ADD COLUMN ${name} TEXT`)
    }
    this.#insert = this.#db.prepare(
      `INSERT INTO submissions (id, chain, stage, created_at, updated_at, deadline, request, call_gas)
       VALUES (@id, @chain, @stage, @createdAt, @updatedAt, @deadline, @request, @callGas)`,
    )
    this.#get = this.#db.prepare('SELECT * FROM submissions WHERE id = ?')
    this.#active = this.#db.prepare(
      "SELECT * FROM submissions WHERE chain = ? AND stage IN ('waiting', 'sending', 'confirming') ORDER BY created_at, id",
    )
    this.#highestNonce = this.#db.prepare('SELECT MAX(tx_nonce) AS nonce FROM submissions WHERE chain = ?')
  }

  async insert(submission: Submission): Promise<void> {
    this.#insert.run({ ...submission, request: JSON.stringify(submission.request), callGas: submission.callGas ?? null })
  }

  async get(id: string): Promise<Submission | undefined> {
    const row = this.#get.get(id)
    return row && fromRow(row)
  }

  async active(chain: string): Promise<Submission[]> {
    return this.#active.all(chain).map(fromRow)
  }

  async update(id: string, patch: SubmissionPatch): Promise<void> {
    const columns = patchColumns(patch, Date.now())
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
