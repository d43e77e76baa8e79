import type { Address, Hex } from 'viem'
import type { RelayOutcome, Stage, SubmitRequest } from '../relay/schemas.ts'

/** The runner's transaction for a submission, stored signed *before* it is broadcast. */
export interface SentTransaction {
  /**
   * The runner key that signed it: its lane (`runner.lanes`). Absent in transactions stored before
   * lanes, which the first lane (`runner.key`) sent.
   */
  readonly from?: Address
  readonly hash: Hex
  readonly nonce: number
  /** The signed bytes: rebroadcast as they are after a restart, so nothing is ever sent twice. */
  readonly raw: Hex
  readonly maxFeePerGas: string
  readonly maxPriorityFeePerGas: string
  readonly gas: string
  /** The call's stipend inside `raw`: a replacement keeps it, changing only the fees. */
  readonly callGas: string
  /** The refund's cap inside `raw` (0 or absent: none), kept by a replacement like the stipend. */
  readonly refundGas?: string
  /** unix ms of the (latest) broadcast */
  readonly sentAt: number
  /** unix ms of the first broadcast at this nonce: `runner.maxSendingMs` counts from it. */
  readonly firstSentAt: number
  /** A 0-value self-transfer at the nonce, which takes the place of a relay that stayed unincluded too long. */
  readonly cancel?: true
  /** The cancellation is for the payment's expiry, which its payer chose: included, it is a fault of the payer. */
  readonly expiring?: true
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
  /** What makes its payment unique (`3009:…` token, from and nonce; a delegate's, e.g. its account and batch nonce): one active submission each. */
  readonly identity?: string
  /** The call's stipend measured at submit (decimal gas): each send re-simulates with it, raising it only if the call now needs more. */
  readonly callGas?: string
  /** The payee's refund's cap measured at submit (decimal gas; absent: no refund, the payee keeps the payment): each send signs it. */
  readonly refundGas?: string
  /** The paying account (the signed transfer's `from`, the batch's account), for admission. */
  readonly payer?: string
  /** Who submitted it (the caller's address as the transport saw it), for admission. */
  readonly client?: string
  /** The client's own key for this payment (x402's `payment-identifier`): one submission per chain each. */
  readonly paymentId?: string
  /** What its call spends (a delegate's signed batch: its account and nonce), whatever pays: one active submission each. */
  readonly callSpends?: string
  /**
   * Set when it failed by its payer's doing, counted against the payer and the client: `payer` (its
   * payment or call stopped working after it was accepted), `revert` (its payment reverted on chain:
   * the runner paid for that).
   */
  readonly fault?: 'payer' | 'revert'
  readonly transaction?: SentTransaction
  readonly blockNumber?: string
  readonly gasUsed?: string
  readonly fee?: string
  readonly reason?: string
  /** What the transaction did once included: the payment received, and whether the call succeeded. */
  readonly outcome?: RelayOutcome
}

export type SubmissionPatch = Partial<Pick<Submission, 'stage' | 'blockNumber' | 'gasUsed' | 'fee' | 'outcome' | 'fault'>> & {
  /** `null` clears it: a transaction the node refused holds no nonce. */
  readonly transaction?: SentTransaction | null
  /** `null` clears it: a held submission that is sent no longer waits for a reason. */
  readonly reason?: string | null
}

/**
 * A runner's proof that it still owns its key (a fencing token): the key's name and the epoch it
 * took the key at. The store keeps each key's latest epoch, raised by one at every takeover
 * (`takeRunnerKey`), and refuses a runner write carrying an older one: a process that stalled past
 * its lock (paused, partitioned) and wakes up still sending can neither reserve a nonce nor store a
 * transaction to broadcast, and every transaction is stored before it is broadcast.
 */
export interface RunnerFence {
  /** The runner key's name (`runnerKeyName`: the chain id and the runner's address). */
  readonly key: string
  readonly epoch: number
}

/** A runner write refused: since its fence was issued, another process took the key (at `current`). */
export class StaleEpochError extends Error {
  override readonly name = 'StaleEpochError'
  constructor(
    readonly fence: RunnerFence,
    readonly current: number,
  ) {
    super(`runner key ${fence.key} is at epoch ${current}: a write at epoch ${fence.epoch} is refused`)
  }
}

/**
 * The most active submissions (waiting, sending, confirming) a payer and a client may have, with the
 * new one: `insert` counts theirs and stores in one transaction, so concurrent submits cannot all
 * pass a count read before any of them was stored.
 */
export interface ActiveCaps {
  readonly payer: number
  readonly client?: number
}

/** An insert refused: `party` already has `active` active submissions, its cap. */
export class ActiveCapReached extends Error {
  override readonly name = 'ActiveCapReached'
  constructor(
    readonly party: 'payer' | 'client',
    readonly active: number,
  ) {
    super(`the ${party} has ${active} active submissions, its cap`)
  }
}

/** An insert refused: another submission of the chain was stored with its `paymentId`. */
export class PaymentIdTaken extends Error {
  override readonly name = 'PaymentIdTaken'
  constructor(readonly paymentId: string) {
    super(`the payment id ${paymentId} names another submission`)
  }
}

/** An insert refused: an active submission (`holder`) already spends what its call spends, or what its payment does. */
export class AlreadySpent extends Error {
  override readonly name = 'AlreadySpent'
  constructor(
    readonly spent: string,
    readonly holder: string,
  ) {
    super(`${spent} is spent by the active submission ${holder}`)
  }
}

/** How many active submissions a party has, and how many of its submissions failed by its doing lately. */
export interface PartyStanding {
  readonly active: number
  /** Failures of its doing since `since`, reverts included. */
  readonly faults: number
  /** Of those, payments that reverted on chain. */
  readonly reverts: number
  /** unix ms of the latest fault, if any */
  readonly lastFaultAt?: number
}

export interface Standing {
  readonly payer: PartyStanding
  readonly client?: PartyStanding
}

/**
 * Where submissions live. Every write is durable when its promise resolves: a submission
 * acknowledged to a caller survives a crash of the process (kill -9 included).
 * Two implementations: `SqliteSubmissionStore` (embedded, one process) and
 * `PostgresSubmissionStore` (shared by replicas); `openStore` picks one from the config.
 *
 * Any process may insert a submission; only the owner of the chain's runner key changes one, and
 * every change carries its fence (`RunnerFence`).
 */
export interface SubmissionStore {
  /**
   * Stores a new submission and returns it — unless an active one (waiting, sending, confirming)
   * has the same `identity`: then nothing is stored and that one is returned. Atomic across
   * processes sharing the store (a unique index), so concurrent identical submits store one.
   * With `caps`, a new submission whose payer (or client) already has its cap of active ones is
   * not stored (`ActiveCapReached`); the count and the insert are one transaction, serialized per
   * payer and per client across processes. A submission whose `paymentId` another submission of
   * its chain holds is not stored either (`PaymentIdTaken`), nor one whose call spends what an active
   * submission's call or payment spends, or whose payment spends what an active one's call does
   * (`AlreadySpent`).
   */
  insert(submission: Submission, caps?: ActiveCaps): Promise<Submission>
  /** The submission done with this payment identity, if any: its payment is spent, so a repeat of it can only be answered by it. */
  doneByIdentity(identity: string): Promise<Submission | undefined>
  /** The submission stored on `chain` with this `paymentId`, if any (until it is pruned). */
  byPaymentId(chain: string, paymentId: string): Promise<Submission | undefined>
  /** The active submission whose payment is `identity`, if any. */
  activeByIdentity(identity: string): Promise<Submission | undefined>
  get(id: string): Promise<Submission | undefined>
  /** The chain's submissions not yet done or failed, oldest first. */
  active(chain: string): Promise<Submission[]>
  /**
   * Changes a submission, if `fence` is still its key's latest epoch; else changes nothing and
   * throws `StaleEpochError`. A takeover (`takeRunnerKey`) and a fenced write are serialized: a
   * write under way when the key is taken commits before the new owner reads anything.
   */
  update(id: string, patch: SubmissionPatch, fence: RunnerFence): Promise<void>
  /**
   * The highest nonce of the runner key `lane` that the chain's submissions hold, if any: the nonces
   * of its transactions that may be on chain. A submission that failed without a block (its
   * broadcast refused) holds none. `first`: the key is the first lane, whose transactions stored
   * before lanes name no key.
   */
  highestNonce(chain: string, lane: Address, first: boolean): Promise<number | undefined>
  /**
   * A waiting submission's first send (`patch` stores its transaction, from `lane`), made only if it
   * is still waiting with no transaction and its payer has no other transaction in flight (sending
   * or confirming), on any lane: answers whether it was made. One transaction, serialized per payer
   * across processes, so two lanes (two replicas) never send the same submission, nor two of one
   * payer's at once. Fenced like `update`.
   */
  claim(id: string, patch: SubmissionPatch, fence: RunnerFence): Promise<boolean>
  /** Deletes the submissions settled (done or failed) before `before` (unix ms); says how many. Fenced like `update`. */
  prune(before: number, fence: RunnerFence): Promise<number>
  /**
   * Takes the runner key `key` over: raises its epoch by one (to 1 the first time) and returns the
   * fence carrying it. Every write carrying an older fence is refused from then on.
   */
  takeRunnerKey(key: string): Promise<RunnerFence>
  /** The runner key's latest epoch (0 before it is first taken). */
  runnerEpoch(key: string): Promise<number>
  /**
   * Says that `replica` (a process's runner on `chain`) is alive now, and answers how many replicas
   * of the chain are (each said so within `liveMs`, itself included): the runners divide the chain's
   * lanes by it. Always 1 for a store one process uses.
   */
  heartbeat(chain: string, replica: string, liveMs: number): Promise<number>
  /** A payer's and a client's standing: their active submissions, and their faults since `since` (unix ms). */
  standing(payer: string, client: string | undefined, since: number): Promise<Standing>
  /** Whether the store answers (for health checks). */
  ping(): Promise<boolean>
  close(): Promise<void>
}
