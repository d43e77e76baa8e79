/**
 * The share between replicas of one chain's lanes (runner keys): how many lanes this process may own
 * (`laneShare`, its part of the replicas alive), which lane it gives up when more are alive, how it
 * stands down from a lane it lost or was taken over on, and which new submissions it sends first
 * (`fallsHere`: its payers', any once they waited `HOME_REPLICA_MS`).
 */
import type { Submission } from '../store/store.ts'
import type { Lane } from './lanes.ts'
import { payerOf, type RunnerState } from './state.ts'

/** A replica that has not said it is alive for this long (or 5 polls, if longer) no longer counts when lanes are divided. */
const REPLICA_LIVE_MS = 5_000

/**
 * How long a new submission waits for the replica it falls to (`fallsHere`) before any replica
 * dividing the lanes sends it: long enough for a live one to (it is woken at once), short enough
 * that one gone or overloaded delays its payers by about this.
 */
export const HOME_REPLICA_MS = 1_000

/**
 * Ends this process's tenure as a lane's owner, once it finds the key lost (its lock's session
 * ended) or taken over (the store refused a write: `current` is the new owner's epoch). It forgets
 * the lane's nonce (and, with no lane left, its holds), gives the lock up, and sends nothing more on
 * the lane until it takes the key again at a new epoch, starting over then as after a restart.
 */
export async function standDown(state: RunnerState, lane: Lane, current: number): Promise<void> {
  const { epoch } = lane.fence!
  lane.fence = undefined
  lane.nextNonce = undefined
  if (!state.lanes.some((each) => each.fence)) state.holds.clear()
  const to = current > epoch ? ` to epoch ${current}` : ''
  state.log.warn({ epoch, current, operator: lane.address }, `runner stands down: it lost ownership of the runner key at epoch ${epoch}${to}; it sends nothing until it takes the key again`)
  await lane.ownership.release()
}

/**
 * How many lanes this process may own: all of them alone, else its part of the replicas alive on
 * the chain (rounded up, so that every lane has an owner). A single lane needs no count.
 */
export async function laneShare(state: RunnerState): Promise<number> {
  if (state.lanes.length === 1) return 1
  const { store, network } = state.context
  const liveMs = Math.max(REPLICA_LIVE_MS, 5 * network.config.runner.pollMs)
  const replicas = await store.heartbeat(network.name, state.replica, liveMs)
  return Math.ceil(state.lanes.length / replicas)
}

/**
 * Gives a lane up for another replica to take (more replicas alive than when it was taken): its
 * nonce forgotten and its lock released; the taker starts it over as after a restart, rebroadcasting
 * what is in flight.
 */
export async function giveUp(state: RunnerState, lane: Lane, share: number): Promise<void> {
  lane.fence = undefined
  lane.nextNonce = undefined
  state.log.info({ operator: lane.address, share, lanes: state.lanes.length }, `runner gives a lane up: the replicas alive share ${state.lanes.length} lanes, ${share} each at most`)
  await lane.ownership.release()
}

/**
 * Whether this process sends a new submission now. Replicas dividing the lanes divide new work too,
 * so that two do not both simulate every submission, one of them in vain: each payer's go first to
 * the replica owning the lane its address falls to (the address modulo the lanes); one still waiting
 * `HOME_REPLICA_MS` after it was accepted is any replica's. A process owning every lane takes all.
 */
export function fallsHere(state: RunnerState, submission: Submission, now: number): boolean {
  const home = state.lanes[Number(BigInt(payerOf(submission)) % BigInt(state.lanes.length))]!
  return (home.fence !== undefined && home.ownership.held()) || now - submission.createdAt > HOME_REPLICA_MS
}
