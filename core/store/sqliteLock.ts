import { mkdirSync } from 'node:fs'
import { hostname } from 'node:os'
import { dirname, resolve } from 'node:path'
import Database from 'better-sqlite3'

/** Who holds a SQLite store, as the holder recorded it. */
export interface StoreHolder {
  readonly pid: number
  readonly host: string
  /** When it took the store, ms since the epoch. */
  readonly since: number
}

/** A second process asked for a SQLite store another process holds. */
export class StoreInUseError extends Error {
  override readonly name = 'StoreInUseError'
  constructor(
    readonly path: string,
    readonly holder: StoreHolder | undefined,
  ) {
    const who = holder
      ? `PID ${holder.pid} on host ${holder.host}, since ${new Date(holder.since).toISOString()}`
      : 'a process that has not recorded its PID yet'
    super(
      `store.path ${resolve(path)} is in use by another Bruno (${who}): a SQLite store, and the runner keys ` +
        `that send from it, belong to one process. Stop that one first, or give this one its own ` +
        `store.path; replicas share a PostgreSQL store instead (DEPLOYMENT.md, "Scaling out")`,
    )
  }
}

/** A held store lock. */
export interface StoreLock {
  /** Gives the store up (at once; a process that dies gives it up too, however it dies). */
  release(): void
}

/**
 * Takes the SQLite store at `path` for this process alone, or throws {@link StoreInUseError}
 * naming the holder's PID. The runner sends from the store's submissions with nonces it counts
 * from them, so two processes on one file would send twice with one key.
 *
 * The lock is the operating system's: an exclusive SQLite transaction on `<path>.lock` (an empty
 * file beside the store), held open for the life of the process. SQLite takes it as a POSIX
 * advisory lock (LockFileEx on Windows), which the kernel drops when the process ends, however it
 * ends — `kill -9` included — so a dead holder never blocks the next start, and no PID has to be
 * judged alive (a PID file can name a reused PID, or one in another container, forever). The lock
 * file is left in place on close: deleting it would let a process that opened it before the
 * delete, and one that creates a new one after, both hold "the" lock. The holder's PID, host and
 * start are recorded in the store (`store_holder`), for the error another process gets. Like
 * SQLite itself, it needs a local file system (not NFS).
 *
 * @example
 * const lock = lockSqliteStore('/var/lib/bruno/bruno.sqlite') // throws if another process has it
 * lock.release()
 */
export function lockSqliteStore(path: string): StoreLock {
  mkdirSync(dirname(path), { recursive: true })
  // timeout 0: a held lock is reported at once, not waited for.
  const lock = new Database(`${path}.lock`, { timeout: 0 })
  try {
    // No journal file beside the lock: nothing is ever written to it.
    lock.pragma('journal_mode = MEMORY')
    lock.exec('BEGIN EXCLUSIVE')
  } catch (error) {
    lock.close()
    if ((error as { code?: unknown }).code === 'SQLITE_BUSY') throw new StoreInUseError(path, storeHolder(path))
    throw error
  }
  try {
    recordHolder(path)
  } catch (error) {
    lock.close()
    throw error
  }
  return { release: () => lock.close() }
}

const HOLDER_TABLE = `
CREATE TABLE IF NOT EXISTS store_holder (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  pid INTEGER NOT NULL,
  host TEXT NOT NULL,
  since INTEGER NOT NULL
)`

function recordHolder(path: string): void {
  const db = new Database(path)
  try {
    db.exec(HOLDER_TABLE)
    db.prepare('INSERT OR REPLACE INTO store_holder (id, pid, host, since) VALUES (1, ?, ?, ?)').run(process.pid, hostname(), Date.now())
  } finally {
    db.close()
  }
}

/**
 * The holder the store at `path` records, read without taking any lock; `undefined` when none is
 * recorded (a holder in the instant between taking the lock and recording itself).
 */
export function storeHolder(path: string): StoreHolder | undefined {
  try {
    const db = new Database(path, { readonly: true, fileMustExist: true })
    try {
      return db.prepare<[], StoreHolder>('SELECT pid, host, since FROM store_holder WHERE id = 1').get()
    } finally {
      db.close()
    }
  } catch {
    return undefined
  }
}
