/**
 * Whether this process may send with a chain's runner key. Only the owner assigns nonces, signs
 * and broadcasts, so replicas sharing one key never send two transactions with the same nonce.
 * The runner loop asks `held()` before each send and calls `acquire()` when it does not own the
 * key; when `acquire()` succeeds it re-reads the nonce state and rebroadcasts what is in flight,
 * since another process may have sent with the key meanwhile.
 *
 * @example
 * const ownership = localOwnership()
 * if (ownership.held() || (await ownership.acquire())) sendNext()
 */
export interface RunnerOwnership {
  /** Takes ownership if no other process holds it; resolves `true` while this process owns the key. */
  acquire(): Promise<boolean>
  /** Whether this process owns the key, as far as it knows now (no I/O: asked before every send). */
  held(): boolean
  /** Gives ownership up, so another process takes over at once instead of after a failure. */
  release(): Promise<void>
}

/**
 * Ownership for a store that one process uses (SQLite): that process owns every key. It is the
 * only one: the store's file lock (`lockSqliteStore`) keeps a second process from opening it.
 *
 * @example
 * new RunnerLoop(context, account, log, localOwnership())
 */
export function localOwnership(): RunnerOwnership {
  let held = false
  return {
    acquire: async () => (held = true),
    held: () => held,
    release: async () => {
      held = false
    },
  }
}
