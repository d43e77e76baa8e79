import type { FastifyBaseLogger } from 'fastify'
import type { Address } from 'viem'
import type { StoreConfig } from '../../config/schema.ts'
import { localOwnership, runnerKeyName, type RunnerOwnership } from './ownership.ts'
import { PostgresLockSession, PostgresRunnerLock } from './postgresRunnerLock.ts'
import { PostgresSubmissionStore } from './postgresStore.ts'
import { lockSqliteStore } from './sqliteLock.ts'
import { SqliteSubmissionStore } from './sqliteStore.ts'
import type { SubmissionStore } from './store.ts'

/** The configured store, and how runner keys are owned with it. */
export interface RelayStorage {
  readonly store: SubmissionStore
  /**
   * Who sends for `runner.operator` on a chain: this process alone (SQLite), or one replica at a
   * time (PostgreSQL, every key's lock on one session of this process's), whose runner is woken
   * (`runner.wake`) by submissions any replica accepts.
   */
  ownership(chain: { name: string; chainId: number }, runner: { operator: Address; wake: () => void }, log: FastifyBaseLogger): RunnerOwnership
}

/**
 * Opens the store the config names. A SQLite file is this process's alone: opening one another
 * process holds throws `StoreInUseError`, naming the holder's PID (`:memory:` needs no lock). The
 * PostgreSQL URL is read from the environment variable the config names (the loader has checked
 * it is set), and goes nowhere else.
 *
 * @example
 * const { store, ownership } = openStore(config.store, process.env)
 * new RunnerLoop(context, account, log, ownership(network, { operator: account.address, wake }, log))
 */
export function openStore(config: StoreConfig, env: NodeJS.ProcessEnv): RelayStorage {
  if (config.kind === 'sqlite') {
    const store = openSqlite(config.path)
    return { store, ownership: (chain, runner) => localOwnership(store, runnerKeyName(chain.chainId, runner.operator)) }
  }
  const url = env[config.url.env]
  if (!url) throw new Error(`store.url: environment variable ${config.url.env} is not set`)
  const store = new PostgresSubmissionStore(url)
  // Every runner key's lock (each chain's lanes) on one session of this process's.
  const session = new PostgresLockSession(url)
  return {
    store,
    ownership: (chain, runner, log) =>
      new PostgresRunnerLock(url, { name: runnerKeyName(chain.chainId, runner.operator), chain: chain.name, onSubmission: runner.wake, epochs: store, session }, log),
  }
}

function openSqlite(path: string): SqliteSubmissionStore {
  if (path === ':memory:') return new SqliteSubmissionStore(path)
  const lock = lockSqliteStore(path)
  try {
    return new SqliteSubmissionStore(path, lock)
  } catch (error) {
    lock.release()
    throw error
  }
}
