import type { Address } from 'viem'
import type { RunnerFence, SubmissionStore } from './store.ts'

/**
 * Whether this process may send with a chain's runner key. Only the owner assigns nonces, signs
 * and broadcasts, so replicas sharing one key never send two transactions with the same nonce.
 * The runner loop asks `held()` before each send and calls `acquire()` when it does not own the
 * key; when `acquire()` succeeds it re-reads the nonce state and rebroadcasts what is in flight,
 * since another process may have sent with the key meanwhile.
 *
 * Taking the key raises its epoch in the store: `acquire()` answers with the fence (`RunnerFence`)
 * that every runner write carries, and the store refuses the writes of an owner that was taken over.
 *
 * @example
 * const ownership = localOwnership(store, runnerKeyName(8453, operator))
 * const fence = await ownership.acquire()
 * if (fence) await store.update(id, patch, fence)
 */
export interface RunnerOwnership {
  /**
   * Takes ownership if no other process holds it: resolves this tenure's fence (a new epoch each
   * time the key is taken, the same while it is held), or `undefined` while another process owns it.
   */
  acquire(): Promise<RunnerFence | undefined>
  /** Whether this process owns the key, as far as it knows now (no I/O: asked before every send). */
  held(): boolean
  /** Gives ownership up, so another process takes over at once instead of after a failure. */
  release(): Promise<void>
}

/**
 * The name of the runner key `operator` on a chain: one key, one owner and one epoch, whichever
 * chains' configs or deployments share the store.
 *
 * @example
 * runnerKeyName(8453, '0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65') // 'bruno-runner:8453:0x15d34aaf54267db7d7c367839aaf71a00a2c6a65'
 */
export function runnerKeyName(chainId: number, operator: Address): string {
  return `bruno-runner:${chainId}:${operator.toLowerCase()}`
}

/**
 * Ownership for a store that one process uses (SQLite): that process owns every key. It is the
 * only one: the store's file lock (`lockSqliteStore`) keeps a second process from opening it. It
 * takes the key's epoch from the store like the PostgreSQL lock does, so the runner has one path.
 *
 * @example
 * new RunnerLoop(context, account, log, localOwnership(store, runnerKeyName(chainId, account.address)))
 */
export function localOwnership(store: Pick<SubmissionStore, 'takeRunnerKey'>, key: string): RunnerOwnership {
  let fence: RunnerFence | undefined
  return {
    acquire: async () => (fence ??= await store.takeRunnerKey(key)),
    held: () => fence !== undefined,
    release: async () => {
      fence = undefined
    },
  }
}
