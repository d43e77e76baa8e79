/**
 * What the parts of the runner share within a chain (`RunnerLoop` owns it and passes it to each):
 * the chain's context, its lanes, the log, the holds of waiting submissions and the receipts looked
 * for. It decides nothing itself; it also keeps the two readings every part makes the same way:
 * whose payment a submission spends (`payerOf`), and a fault's reason in a caller's words (`shortReason`).
 */
import type { FastifyBaseLogger } from 'fastify'
import { BaseError, getAddress } from 'viem'
import type { RelayContext } from '../relay/context.ts'
import type { Submission } from '../store/store.ts'
import type { Hold } from './holds.ts'
import type { Lane } from './lanes.ts'

/** The runner of one chain's shared state: owned by its `RunnerLoop`, read and written by each part of a pass. */
export interface RunnerState {
  readonly context: RelayContext
  readonly lanes: readonly Lane[]
  readonly log: FastifyBaseLogger
  readonly holds: Map<string, Hold>
  /** The latest block at which each transaction in flight was last looked for, and how many hashes it had then. */
  readonly lookedAt: Map<string, { block: bigint; hashes: number }>
  /** This process's name among the replicas dividing the chain's lanes. */
  readonly replica: string
  /** How many submissions this pass left waiting for a lane's slot. */
  slotWaits: number
}

/**
 * The account whose payment a submission spends, as submit read it (the signed transfer's `from`,
 * the batch's account, which is not `call.to` where a delegation manager or an EntryPoint runs the
 * batch); the store's `claim` keys by the same. A row stored before it kept its payer: the transfer's
 * `from`, else the call's target.
 */
export function payerOf({ payer, request }: Submission): string {
  if (payer !== undefined) return getAddress(payer)
  return 'authorization' in request.payment ? getAddress(request.payment.authorization.from) : getAddress(request.call.to)
}

/**
 * Why a fault held a submission, in the words the caller can read in `status`: the node's own
 * (viem's `details`) where it answered, else the error's first line; any URL taken out.
 */
export function shortReason(error: unknown): string {
  const details = error instanceof BaseError ? error.details : undefined
  const message = details || (error instanceof BaseError ? error.shortMessage : error instanceof Error ? error.message : String(error))
  return message.split('\n')[0]!.replace(/\b[a-z][a-z0-9+.-]*:\/\/\S+/gi, '[url]').slice(0, 300)
}
