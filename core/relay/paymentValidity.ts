import type { NetworkConfig } from '../../config/schema.ts'

/**
 * How long a payment must still be valid for the runner to send it (and for submit to accept it):
 * `relay.paymentMarginSec`, within which a relay in flight is cancelled, plus `relay.inclusionSec`,
 * the time a sent transaction may take to be included. Sent with less, it would be cancelled at the
 * margin before its time, at the runner's cost.
 *
 * @example
 * leastPaymentValiditySec(network.relay) // 60 with the defaults (30 + 30)
 */
export function leastPaymentValiditySec(relay: Pick<NetworkConfig['relay'], 'paymentMarginSec' | 'inclusionSec'>): number {
  return relay.paymentMarginSec + relay.inclusionSec
}

/** A submission's signed part that expires first: its payment, or its call's own signed transfer. */
export interface Expiry {
  /** Unix seconds. */
  readonly at: bigint
  /** What expires, as the relay's texts name it: "its payment" or "its call's signed transfer". */
  readonly what: string
}

/**
 * What of a request expires first: its payment (`validBefore`, a batch's deadline) or its call's
 * own signed EIP-3009 transfer (`validBefore`), each held to the same least validity since a call
 * that expires before it is sent still pays and does nothing; `undefined` when neither expires.
 *
 * @example
 * soonestExpiry({ paymentDeadline: 1767225900n, callDeadline: 1767225610n }) // { at: 1767225610n, what: "its call's signed transfer" }
 */
export function soonestExpiry({ paymentDeadline, callDeadline }: { readonly paymentDeadline: bigint; readonly callDeadline: bigint }): Expiry | undefined {
  if (callDeadline !== 0n && (paymentDeadline === 0n || callDeadline < paymentDeadline)) return { at: callDeadline, what: 'its call\'s signed transfer' }
  return paymentDeadline === 0n ? undefined : { at: paymentDeadline, what: 'its payment' }
}
