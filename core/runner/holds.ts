/**
 * Why a waiting submission is not sent yet, and when it is looked at again: a hold's reason and
 * backoff (longer for a simulation that keeps failing, none behind its payer's transaction in flight),
 * a wait for a lane's slot, and a submission failed instead of sent once past its deadline or too near
 * its payment's expiry.
 */
import { paymentToken } from '../relay/paymentToken.ts'
import { leastPaymentValiditySec, soonestExpiry, type Expiry } from '../relay/paymentValidity.ts'
import { relayOfRequest } from '../relay/relayOfRequest.ts'
import type { Submission } from '../store/store.ts'
import { anyFence, type Lane } from './lanes.ts'
import type { RunnerState } from './state.ts'

/** Why a submission waits while the lane that would send it cannot pay for its gas. */
export const SHORT_OF_ETH = "waiting: the runner's ETH balance is too low to send it"

/** The longest wait before a held submission is looked at again (SPEC §6: "up to 60 s"). */
export const MAX_HOLD_MS = 60_000
/**
 * A submission held because its own simulation fails (its payment or call, or the node on it) backs
 * off further: that rarely mends itself, and a look at it costs simulations. It fails once it has
 * failed for `relay.failingHoldSec`.
 */
const MAX_FAILING_HOLD_MS = 3_600_000

/** A held submission's backoff: how often it was held in a row, and when it may be looked at again. */
export interface Hold {
  readonly holds: number
  readonly retryAt: number
  /** Held because its simulation failed, since (unix ms) and by whose doing; absent for a market or in-flight hold. */
  readonly failing?: Failing
  /** Held behind this payer's transaction in flight: due again as soon as that one settles, with no backoff. */
  readonly behind?: string
}

/** A simulation that keeps failing: by the payer's payment or call (counted against it), or by the node on it. */
export interface Failing {
  readonly since: number
  readonly byPayer: boolean
}

/**
 * Fails a waiting submission past its deadline, or whose payment (or call's signed transfer) expires within
 * `relay.paymentMarginSec` + `relay.inclusionSec` (sent, it would be cancelled before its time to be
 * included): answers whether it did.
 */
export async function failIfTooLate(state: RunnerState, submission: Submission): Promise<boolean> {
  const { store, network } = state.context
  const now = Math.floor(Date.now() / 1000)
  if (now > submission.deadline) {
    const byPayer = state.holds.get(submission.id)?.failing?.byPayer ?? false
    state.holds.delete(submission.id)
    await store.update(submission.id, {
      stage: 'failed',
      reason: `not sent before its deadline${submission.reason ? `: ${submission.reason}` : ''}`,
      ...(byPayer ? { fault: 'payer' as const } : {}),
    }, anyFence(state))
    return true
  }
  const { request } = submission
  const token = paymentToken(network, request.payment.token)
  const requested = relayOfRequest(state.context, request.call, request.payment, token)
  const margin = BigInt(leastPaymentValiditySec(network.config.relay))
  const expiry = soonestExpiry(requested)
  if (expiry && expiry.at - BigInt(now) < margin) {
    state.holds.delete(submission.id)
    await store.update(submission.id, {
      stage: 'failed',
      reason: `not sent: ${expiry.what} expires at ${expiry.at}, within ${margin} s${submission.reason ? ` (${submission.reason})` : ''}`,
    }, anyFence(state))
    return true
  }
  return false
}

/**
 * Holds a waiting submission with its reason, and backs off before looking at it again. `failing`:
 * its simulation failed, by its payment or call (`payer`, counted against the payer should it fail
 * for it) or by the node (`fault`); such a hold ends in failure after `relay.failingHoldSec`.
 */
export async function hold(state: RunnerState, submission: Submission, reason: string, failing?: 'payer' | 'fault'): Promise<void> {
  const { store, network } = state.context
  const previous = state.holds.get(submission.id)
  const now = Date.now()
  const pollMs = network.config.runner.pollMs
  const holds = (previous?.holds ?? 0) + 1
  if (failing === undefined) {
    state.holds.set(submission.id, { holds, retryAt: now + Math.min(pollMs * 2 ** holds, MAX_HOLD_MS) })
  } else {
    const since = previous?.failing?.since ?? now
    const failingHoldSec = network.config.relay.failingHoldSec
    const endsAt = since + failingHoldSec * 1000
    if (now >= endsAt) {
      // Each look is a simulation on the node: kept for good, held junk would cost it forever.
      state.holds.delete(submission.id)
      await store.update(submission.id, {
        stage: 'failed',
        reason: `not sent: its ${failing === 'payer' ? 'payment or call' : 'simulation'} kept failing for ${failingHoldSec} s: ${reason}`,
        ...(failing === 'payer' ? { fault: 'payer' as const } : {}),
      }, anyFence(state))
      return
    }
    // The last look falls when its time is up, not a doubling later.
    const waitMs = Math.min(pollMs * 2 ** holds, MAX_FAILING_HOLD_MS, endsAt - now)
    state.holds.set(submission.id, { holds, retryAt: now + waitMs, failing: { since, byPayer: failing === 'payer' || previous?.failing?.byPayer === true } })
  }
  if (reason !== submission.reason) await store.update(submission.id, { reason }, anyFence(state))
}

/**
 * Holds a submission behind its payer's transaction in flight, without backoff: the pass after that
 * one settles looks at it again (each payer's submissions go one after another, none waiting out a
 * doubling delay behind the last).
 */
export async function holdBehind(state: RunnerState, submission: Submission, payer: string): Promise<void> {
  const previous = state.holds.get(submission.id)
  state.holds.set(submission.id, { holds: (previous?.holds ?? 0) + 1, retryAt: 0, behind: payer })
  const reason = `waiting: ${payer} has a transaction in flight; this one follows it`
  if (reason !== submission.reason) await state.context.store.update(submission.id, { reason }, anyFence(state))
}

/**
 * Leaves a submission waiting (failed instead if too late), without a look or a backoff, while every lane has
 * `runner.maxInFlight` transactions unincluded (or the node said its pool holds no more of them, or
 * its ETH is short): the next pass with a free slot takes it, in turn.
 */
export async function waitForSlot(state: RunnerState, submission: Submission, owned: readonly Lane[]): Promise<void> {
  if (await failIfTooLate(state, submission)) return
  state.slotWaits++
  const { maxInFlight } = state.context.network.config.runner
  const reason =
    owned.length === 1
      ? owned[0]!.short === undefined
        ? owned[0]!.full
        : SHORT_OF_ETH
      : `waiting: each of the runner's ${owned.length} lanes has ${maxInFlight} transactions in flight (as many as a node's pool keeps per sender) or is short of ETH; this one goes when one is included`
  if (reason !== submission.reason) await state.context.store.update(submission.id, { reason }, anyFence(state))
}

/** What of a submission (its payment, its call's signed transfer) expires within `relay.paymentMarginSec` of `now` (ms): its transaction may not go out again. */
export function nearExpiry(state: RunnerState, submission: Submission, now: number): Expiry | undefined {
  return expiresWithin(state, submission, now, state.context.network.config.relay.paymentMarginSec)
}

/** Whether a waiting submission's payment or call's signed transfer expires too soon to send it: sent, it would be cancelled at the margin before its time to be included. */
export function tooLateToSend(state: RunnerState, submission: Submission, now: number): boolean {
  return expiresWithin(state, submission, now, leastPaymentValiditySec(state.context.network.config.relay)) !== undefined
}

/** What of a submission expires within `seconds` of `now` (ms): its payment or its call's signed transfer, whichever is first. */
function expiresWithin(state: RunnerState, submission: Submission, now: number, seconds: number): Expiry | undefined {
  const token = paymentToken(state.context.network, submission.request.payment.token)
  const expiry = soonestExpiry(relayOfRequest(state.context, submission.request.call, submission.request.payment, token))
  return expiry && expiry.at - BigInt(Math.floor(now / 1000)) < BigInt(seconds) ? expiry : undefined
}
