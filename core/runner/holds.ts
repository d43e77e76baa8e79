/**
 * Why a waiting submission is not sent yet, and when it is looked at again: a hold's reason and
 * backoff (longer for a simulation that keeps failing, none behind its payer's transaction in flight),
 * a wait for a lane's slot, and a submission failed instead of sent once past its deadline or too near
 * its payment's expiry.
 */

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
