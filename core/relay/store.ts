import type { Hex } from 'viem'
import type { RelayOutcome, Stage, SubmitRequest } from './schemas.ts'

/** The runner's transaction for a submission, stored signed *before* it is broadcast. */
export interface SentTransaction {
  readonly hash: Hex
  readonly nonce: number
  /** The signed bytes: rebroadcast as they are after a restart, so nothing is ever sent twice. */
  readonly raw: Hex
  readonly maxFeePerGas: string
  readonly maxPriorityFeePerGas: string
  readonly gas: string
  /** The call's stipend inside `raw`: a replacement keeps it, changing only the fees. */
  readonly callGas: string
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
  /** The call's stipend measured at submit (decimal gas): each send re-simulates with it, raising it only if the call now needs more. */
  readonly callGas?: string
  readonly transaction?: SentTransaction
  readonly blockNumber?: string
  readonly gasUsed?: string
  readonly fee?: string
  readonly reason?: string
  /** What the transaction did once included: the payment received, and whether the call succeeded. */
  readonly outcome?: RelayOutcome
}

export type SubmissionPatch = Partial<Pick<Submission, 'stage' | 'transaction' | 'blockNumber' | 'gasUsed' | 'fee' | 'reason' | 'outcome'>>

/**
 * Where submissions live. Every write is durable when its promise resolves: a submission
 * acknowledged to a caller survives a crash of the process (kill -9 included).
 * Two implementations: `SqliteSubmissionStore` (embedded, one process) and
 * `PostgresSubmissionStore` (shared by replicas); `openStore` picks one from the config.
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
