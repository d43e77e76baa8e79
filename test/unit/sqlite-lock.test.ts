import { existsSync, mkdtempSync, writeFileSync } from 'node:fs'
import { hostname, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import Database from 'better-sqlite3'
import t from 'tap'
import { openStore } from '../../core/store/openStore.ts'
import { lockSqliteStore, storeHolder, StoreInUseError } from '../../core/store/sqliteLock.ts'
import { SqliteSubmissionStore } from '../../core/store/sqliteStore.ts'

// A SQLite store is one process's (core/store/sqliteLock.ts, openStore.ts): the lock on
// `<path>.lock`, the holder recorded in the store, the error a second opener gets, and what
// openStore does with each kind of path. SQLite's locks hold between connections of one process
// too, so a second opener here stands for a second process.

const folder = () => mkdtempSync(join(tmpdir(), 'bruno-sqlite-lock-'))

/** Whether another connection can take `<path>.lock` now (as lockSqliteStore does), released at once. */
function lockFree(path: string): boolean {
  const probe = new Database(`${path}.lock`, { timeout: 0 })
  try {
    probe.exec('BEGIN EXCLUSIVE')
    probe.exec('ROLLBACK')
    return true
  } catch (error) {
    if ((error as { code?: unknown }).code === 'SQLITE_BUSY') return false
    throw error
  } finally {
    probe.close()
  }
}

t.test('the lock: taken in a folder made for it, refused to a second opener at once, taken again once released', async (t) => {
  const path = join(folder(), 'a', 'b', 'bruno.sqlite')
  const start = Date.now()
  const lock = lockSqliteStore(path)
  const end = Date.now()
  t.ok(existsSync(`${path}.lock`), 'the lock file beside the store')
  t.notOk(existsSync(`${path}.lock-journal`), 'no journal beside the lock file')
  t.equal(lockFree(path), false, 'the lock file is held')
  const holder = storeHolder(path)
  t.strictSame(Object.keys(holder ?? {}).sort(), ['host', 'pid', 'since'])
  t.equal(holder?.pid, process.pid, 'this process')
  t.equal(holder?.host, hostname())
  t.ok(holder !== undefined && holder.since >= start && holder.since <= end, 'since when it took the store')

  const refusedAt = Date.now()
  const error = t.throws(() => lockSqliteStore(path)) as StoreInUseError
  t.ok(Date.now() - refusedAt < 2_000, 'refused at once, not after a busy wait')
  t.ok(error instanceof StoreInUseError)
  t.equal(error.name, 'StoreInUseError')
  t.equal(error.path, path)
  t.strictSame(error.holder, holder)
  t.equal(
    error.message,
    `store.path ${path} is in use by another Bruno (PID ${process.pid} on host ${hostname()}, since ${new Date(holder!.since).toISOString()}): ` +
      'a SQLite store, and the runner keys that send from it, belong to one process. Stop that one first, or give this one its own ' +
      'store.path; replicas share a PostgreSQL store instead (DEPLOYMENT.md, "Scaling out")',
  )

  lock.release()
  t.equal(lockFree(path), true, 'released: the lock file is free')
  const again = lockSqliteStore(path)
  t.equal(lockFree(path), false)
  again.release()
})

t.test('StoreInUseError: the path made absolute, and a holder not recorded yet', async (t) => {
  const error = new StoreInUseError('relative/bruno.sqlite', undefined)
  t.equal(error.name, 'StoreInUseError')
  t.equal(error.holder, undefined)
  t.equal(
    error.message,
    `store.path ${resolve('relative/bruno.sqlite')} is in use by another Bruno (a process that has not recorded its PID yet): ` +
      'a SQLite store, and the runner keys that send from it, belong to one process. Stop that one first, or give this one its own ' +
      'store.path; replicas share a PostgreSQL store instead (DEPLOYMENT.md, "Scaling out")',
  )
  const at = new StoreInUseError('/var/lib/bruno/bruno.sqlite', { pid: 4242, host: 'relay-1', since: Date.UTC(2026, 0, 2, 3, 4, 5, 6) })
  t.equal(
    at.message.slice(0, at.message.indexOf(':')),
    'store.path /var/lib/bruno/bruno.sqlite is in use by another Bruno (PID 4242 on host relay-1, since 2026-01-02T03',
  )
  t.match(at.message, /since 2026-01-02T03:04:05\.006Z\): a SQLite store/)
  t.ok(at instanceof Error)
})

t.test('storeHolder: undefined with no store or no holder recorded, and it creates nothing', async (t) => {
  const dir = folder()
  const missing = join(dir, 'missing.sqlite')
  t.equal(storeHolder(missing), undefined)
  t.equal(existsSync(missing), false, 'no file made by asking')
  const bare = join(dir, 'bare.sqlite')
  new Database(bare).close()
  t.equal(storeHolder(bare), undefined, 'a store without the holder table')
  const recorded = join(dir, 'recorded.sqlite')
  const db = new Database(recorded)
  db.exec('CREATE TABLE store_holder (id INTEGER PRIMARY KEY, pid INTEGER NOT NULL, host TEXT NOT NULL, since INTEGER NOT NULL)')
  db.prepare('INSERT INTO store_holder VALUES (?, ?, ?, ?)').run(2, 99, 'elsewhere', 5)
  t.equal(storeHolder(recorded), undefined, 'only the row with id 1 is the holder')
  db.prepare('INSERT INTO store_holder VALUES (?, ?, ?, ?)').run(1, 77, 'there', 1_700_000_000_000)
  db.close()
  t.strictSame(storeHolder(recorded), { pid: 77, host: 'there', since: 1_700_000_000_000 })
})

t.test('a store file that is not SQLite: its error, not StoreInUseError, and the lock given back', async (t) => {
  const path = join(folder(), 'bruno.sqlite')
  writeFileSync(path, 'this is not a SQLite database, not at all: just text long enough to be read as a header')
  const error = t.throws(() => lockSqliteStore(path)) as Error & { code?: string }
  t.notOk(error instanceof StoreInUseError)
  t.equal(error.code, 'SQLITE_NOTADB')
  t.equal(lockFree(path), true, 'the lock was released when recording the holder failed')
})

t.test('a lock file that is not SQLite: its error, not StoreInUseError', async (t) => {
  const path = join(folder(), 'bruno.sqlite')
  writeFileSync(`${path}.lock`, 'this is not a SQLite database, not at all: just text long enough to be read as a header')
  const error = t.throws(() => lockSqliteStore(path)) as Error & { code?: string }
  t.notOk(error instanceof StoreInUseError)
  t.equal(error.code, 'SQLITE_NOTADB')
  t.equal(existsSync(path), false, 'no store was opened')
})

t.test('openStore, SQLite: the file locked while open, its ownership the local one under the runner key\'s name', async (t) => {
  const path = join(folder(), 'nested', 'bruno.sqlite')
  const { store, ownership } = openStore({ kind: 'sqlite', path }, {})
  t.ok(store instanceof SqliteSubmissionStore)
  t.equal(lockFree(path), false, 'locked while open')
  t.equal(storeHolder(path)?.pid, process.pid)
  t.throws(() => openStore({ kind: 'sqlite', path }, {}), StoreInUseError, 'a second open is refused')
  const owner = ownership({ name: 'base', chainId: 8453 }, { operator: '0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65', wake: () => {} }, undefined as never)
  t.equal(owner.held(), false)
  const key = 'bruno-runner:8453:0x15d34aaf54267db7d7c367839aaf71a00a2c6a65'
  t.strictSame(await owner.acquire(), { key, epoch: 1 })
  t.equal(owner.held(), true)
  t.equal(await store.runnerEpoch(key), 1, 'the epoch raised in this store')
  await store.close()
  t.equal(lockFree(path), true, 'closing the store gives the lock up')
  const reopened = openStore({ kind: 'sqlite', path }, {})
  t.equal(await reopened.store.runnerEpoch(key), 1, 'the same file')
  await reopened.store.close()
})

t.test('openStore, SQLite :memory: takes no lock: any number open at once', async (t) => {
  const dir = folder()
  const cwd = process.cwd()
  process.chdir(dir)
  t.teardown(() => process.chdir(cwd))
  const a = openStore({ kind: 'sqlite', path: ':memory:' }, {})
  const b = openStore({ kind: 'sqlite', path: ':memory:' }, {})
  t.ok(a.store instanceof SqliteSubmissionStore)
  t.equal(existsSync(join(dir, ':memory:.lock')), false, 'no lock file')
  t.equal(existsSync(join(dir, ':memory:')), false, 'no store file')
  const fence = await a.ownership({ name: 'local', chainId: 31337 }, { operator: '0xAbCdEf0000000000000000000000000000000001', wake: () => {} }, undefined as never).acquire()
  t.strictSame(fence, { key: 'bruno-runner:31337:0xabcdef0000000000000000000000000000000001', epoch: 1 })
  t.equal(await b.store.runnerEpoch('bruno-runner:31337:0xabcdef0000000000000000000000000000000001'), 0, 'each :memory: store its own')
  await a.store.close()
  await b.store.close()
})

t.test('openStore, SQLite: a store that fails to open gives its lock back', async (t) => {
  const path = join(folder(), 'bruno.sqlite')
  // A valid SQLite file whose submissions table the store cannot index (no chain column).
  const db = new Database(path)
  db.exec('CREATE TABLE submissions (id TEXT PRIMARY KEY)')
  db.close()
  t.throws(() => openStore({ kind: 'sqlite', path }, {}), { message: /no such column/ })
  t.equal(lockFree(path), true, 'the lock was released')
  const lock = lockSqliteStore(path)
  lock.release()
})

t.test('openStore, PostgreSQL: the URL\'s variable must be set and not empty', async (t) => {
  const config = { kind: 'postgres' as const, url: { env: 'BRUNO_UNIT_PG_URL' } }
  t.throws(() => openStore(config, {}), new Error('store.url: environment variable BRUNO_UNIT_PG_URL is not set'))
  t.throws(() => openStore(config, { BRUNO_UNIT_PG_URL: '' }), new Error('store.url: environment variable BRUNO_UNIT_PG_URL is not set'))
  t.throws(() => openStore(config, { OTHER: 'postgres://x@127.0.0.1/y' }), { message: 'store.url: environment variable BRUNO_UNIT_PG_URL is not set' })
})
