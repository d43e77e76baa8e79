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
