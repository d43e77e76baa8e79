/**
 * The most the Runner lets a MetaMask payment redemption spend: the DelegationManager's checks (the
 * account's signature by ERC-1271, the delegation's hash, four hooks of its one caveat, whose first
 * counts the delegation from zero and asks the Runner whose payment phase it is), the delegator's
 * batch and FiatToken's transfer to a payee that may hold nothing yet — ≈91,900 measured to a payee
 * holding some (bench/GAS.md), ≈109,000 to one holding none; so a failing payment costs at most
 * this. The delegation's size does not grow with its batches (their hashes are its terms), so
 * neither does this.
 */
export const METAMASK_PAYMENT_GAS = 150_000n

/**
 * What the payment's redemption costs beyond the leg itself (its gas as the account's own execute
 * runs it): ≈70,700 measured (bench/GAS.md: ≈91,900 for a leg of 21,170), counted with room. The
 * payment phase is priced at the leg and this, never above `METAMASK_PAYMENT_GAS`.
 */
export const PAYMENT_REDEMPTION_GAS = 74_000n

/**
 * What the calls' redemption costs beyond the calls themselves (their gas as the account's own
 * execute runs them), as measured on the devnet's v1.3.0 contracts (bench/GAS.md): the manager's
 * checks and the caveat's four hooks, ≈42,000 beside one call, and ≈2,300 more per call (the batch
 * is copied into each hook and hashed); counted with room.
 */
export const CALLS_REDEMPTION_GAS = { base: 50_000n, perCall: 4_000n } as const

/**
 * What the calls' redemption costs beyond the calls themselves.
 *
 * @example
 * callsRedemptionOverhead(1) // 54_000n
 */
export function callsRedemptionOverhead(calls: number): bigint {
  return CALLS_REDEMPTION_GAS.base + CALLS_REDEMPTION_GAS.perCall * BigInt(calls)
}
