/**
 * The lanes (`runner.lanes`, one runner key each): which lane a new send goes on (`pickLane`: the
 * least loaded that can take work), whether a lane takes work at all (its nonce known, a slot free,
 * ETH to pay, its key this process's), its next nonce, when it is short of ETH and funded again, which
 * lane sent a stored transaction, and the fence a write carries.
 */
import { getAddress, type Address, type LocalAccount, type PublicClient } from 'viem'
import type { RunnerOwnership } from '../store/ownership.ts'
import type { RunnerFence, Submission } from '../store/store.ts'
import type { RunnerState } from './state.ts'

/**
 * One runner key of a chain (a lane, `runner.lanes`): its own nonces, transactions in flight,
 * replacements, gap filling and ownership.
 */
export interface Lane {
  readonly account: LocalAccount
  readonly address: Address
  /** `runner.key`, the Runner's `operator`: transactions stored before lanes (no `from`) are its. */
  readonly first: boolean
  readonly ownership: RunnerOwnership
  /** The lane's own client for its simulations (`Network.laneClient`): no other lane's wait in its batches. */
  readonly client: PublicClient
  /** The fence this process took the key with: set while it owns the key, carried by every write for the lane. */
  fence: RunnerFence | undefined
  nextNonce: number | undefined
  restarted: boolean
  /** Whether this tenure's start was logged (once, with what it takes up). */
  announced: boolean
  /** How many more transactions this pass may send before the lane has `runner.maxInFlight` unincluded. */
  slots: number
  /** Why a submission waits when the lane is full. */
  full: string
  /** The wei the node found the lane's balance short of (its last refused transaction's most): it takes no new work until it holds that. */
  short: bigint | undefined
  /** At the last pass: its transactions unincluded, and whether one is stuck. */
  inFlight: number
  stuck: boolean
}

/** A lane that can send now: its nonce known, a slot free, ETH to pay, and its key still this process's. */
export function takesWork(lane: Lane, slots = lane.slots): boolean {
  return lane.nextNonce !== undefined && slots > 0 && lane.short === undefined && lane.ownership.held()
}

/** A lane's next nonce: the node's pending count, or past the highest its stored transactions hold. */
export async function readNonce(state: RunnerState, lane: Lane): Promise<void> {
  const { network, store } = state.context
  const [pending, stored] = await Promise.all([
    network.client.getTransactionCount({ address: lane.address, blockTag: 'pending' }),
    store.highestNonce(network.name, lane.address, lane.first),
  ])
  lane.nextNonce = Math.max(pending, stored === undefined ? 0 : stored + 1)
}

/**
 * Takes `lane` out of new work until it holds `wei` (at least `runner.minBalanceWei`), with an
 * error to fund it once (naming the submission it could not send).
 */
export function shortOfEth(state: RunnerState, lane: Lane, wei: bigint, submission: string): void {
  const floor = BigInt(state.context.network.config.runner.minBalanceWei)
  if (lane.short === undefined) state.log.error({ submission, operator: lane.address }, 'the runner cannot pay for gas: fund it')
  lane.short = wei > floor ? wei : floor
}

/** A lane short of ETH takes work again once its balance pays for the transaction the node refused. */
export async function checkShort(state: RunnerState, lane: Lane): Promise<void> {
  const balance = await state.context.network.client.getBalance({ address: lane.address })
  if (balance >= lane.short!) {
    state.log.info({ operator: lane.address, balance: balance.toString() }, 'runner lane funded again: it takes work')
    lane.short = undefined
  }
}

/**
 * The lane a new send goes on: of this process's lanes whose nonce is known, with a free slot and
 * ETH to pay, the least loaded (fewest transactions unincluded), one with nothing stuck before one
 * with a transaction stuck past `runner.stuckAfterMs` (`lane.stuck`, as the pass found it: its
 * later nonces would wait behind it). `slots`: a lane's free slots (a plan passes those it has left).
 */
export function pickLane(owned: readonly Lane[], slots = (lane: Lane) => lane.slots): Lane | undefined {
  const open = owned.filter((lane) => takesWork(lane, slots(lane)))
  const rank = (lane: Lane) => (lane.stuck ? 1_000_000 : 0) - slots(lane)
  return open.reduce<Lane | undefined>((best, lane) => (best === undefined || rank(lane) < rank(best) ? lane : best), undefined)
}

/** The fence a write to a waiting submission carries: any of this process's lanes' (none of them sent it). */
export function anyFence(state: RunnerState): RunnerFence {
  return state.lanes.find((lane) => lane.fence && lane.ownership.held())?.fence ?? state.lanes.find((lane) => lane.fence)!.fence!
}

/** The lane that sent a submission's transaction: its `from`, or the first lane for one stored before lanes; undefined for another process's key. */
export function laneOf(state: RunnerState, submission: Submission): Lane | undefined {
  const from = submission.transaction?.from
  return from === undefined ? state.lanes[0] : state.lanes.find((lane) => lane.address === getAddress(from))
}

/**
 * What a lane's start or stop line says it takes up or leaves: its own transactions in flight, by
 * stage, and — on the chain's first lane's line only (runner.key), so that a chain of many lanes
 * counts them once — the submissions waiting for any lane.
 */
export function takenUp(state: RunnerState, lane: Lane, active: readonly Submission[]): { inFlight: { sending: number; confirming: number }; waiting?: number } {
  const own = active.filter((submission) => submission.stage !== 'waiting' && laneOf(state, submission) === lane)
  const inFlight = { sending: own.filter((submission) => submission.stage === 'sending').length, confirming: own.filter((submission) => submission.stage === 'confirming').length }
  return lane === state.lanes[0] ? { inFlight, waiting: active.filter((submission) => submission.stage === 'waiting').length } : { inFlight }
}
