import type { Delegation } from './delegation.ts'

/**
 * What a redemption costs beyond the calls it runs, as measured on the devnet's v1.3.0 contracts
 * (bench/GAS.md): the DelegationManager checks the signature (ERC-1271 on the account) and runs
 * four hooks on each caveat, and `LogicalOrWrapperEnforcer` decodes both pinned batches for every
 * hook — so both redemptions grow with the delegation's size, about 20 gas (payment) and 60 gas
 * (calls) per byte of its caveat terms. Measured: payment 246,244–263,344 gas at 1,728 bytes of
 * terms and 405,753 at 9,728; the calls' redemption 192,000 beyond its calls at 1,728 bytes, 661,000
 * at 9,728, about 7,000 more per call.
 */
export const REDEMPTION_GAS = {
  paymentBase: 230_000n,
  paymentPerTermsByte: 22n,
  callsBase: 90_000n,
  callsPerTermsByte: 64n,
  callsPerCall: 8_000n,
} as const

// The bytes of caveat terms the enforcers decode on every hook.
function termsBytes(delegation: Delegation): bigint {
  return delegation.caveats.reduce((total, caveat) => total + BigInt((caveat.terms.length - 2) / 2), 0n)
}

/**
 * The most the Runner lets the payment redemption spend: what it was measured to use, with room.
 *
 * @example
 * paymentRedemptionGas(delegation) // 268_144n for one transfer
 */
export function paymentRedemptionGas(delegation: Delegation): bigint {
  return REDEMPTION_GAS.paymentBase + REDEMPTION_GAS.paymentPerTermsByte * termsBytes(delegation)
}

/**
 * What the calls' redemption costs beyond the calls themselves (their gas run by the account itself).
 *
 * @example
 * callsRedemptionOverhead(delegation, 1) // 208_592n for one transfer
 */
export function callsRedemptionOverhead(delegation: Delegation, calls: number): bigint {
  return REDEMPTION_GAS.callsBase + REDEMPTION_GAS.callsPerTermsByte * termsBytes(delegation) + REDEMPTION_GAS.callsPerCall * BigInt(calls)
}
