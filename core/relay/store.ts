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
  /** unix ms of the first broadcast at this nonce: `runner.maxSendingMs` counts from it. */
  readonly firstSentAt: number
  /** A 0-value self-transfer at the nonce, which takes the place of a relay that stayed unincluded too long. */
  readonly cancel?: true
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
  /** What makes its payment unique (`3009:…` token, from and nonce; `calibur:…` account and nonce): one active submission each. */
  readonly identity?: string
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

export type SubmissionPatch = Partial<Pick<Submission, 'stage' | 'blockNumber' | 'gasUsed' | 'fee' | 'reason' | 'outcome'>> & {
  /** `null` clears it: a transaction the node refused holds no nonce. */
  readonly transaction?: SentTransaction | null
}

/**
 * Where submissions live. Every write is durable when its promise resolves: a submission
 * acknowledged to a caller survives a crash of the process (kill -9 included).
 * Two implementations: `SqliteSubmissionStore` (embedded, one process) and
 * `PostgresSubmissionStore` (shared by replicas); `openStore` picks one from the config.
 */
export interface SubmissionStore {
  /**
   * Stores a new submission and returns it — unless an active one (waiting, sending, confirming)
   * has the same `identity`: then nothing is stored and that one is returned. Atomic across
   * processes sharing the store (a unique index), so concurrent identical submits store one.
   */
  insert(submission: Submission): Promise<Submission>
  /** The active submission whose payment is `identity`, if any. */
  activeByIdentity(identity: string): Promise<Submission | undefined>
  get(id: string): Promise<Submission | undefined>
  /** The chain's submissions not yet done or failed, oldest first. */
  active(chain: string): Promise<Submission[]>
  update(id: string, patch: SubmissionPatch): Promise<void>
  /**
   * The highest runner nonce the chain's submissions hold, if any: the nonces of transactions that
   * may be on chain. A submission that failed without a block (its broadcast refused) holds none.
   */
  highestNonce(chain: string): Promise<number | undefined>
  /** Deletes the submissions settled (done or failed) before `before` (unix ms); says how many. */
  prune(before: number): Promise<number>
  /** Whether the store answers (for health checks). */
  ping(): Promise<boolean>
  close(): Promise<void>
}
