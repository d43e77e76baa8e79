import type { Fraction } from '../chain/tokenPrice.ts'

/**
 * The relay's money rules, in one place: what gas costs in a payment token, and whether a payment
 * covers the worst case the runner signs. Every figure is an integer; each rounding goes the
 * runner's way (costs up, payments' value down).
 */

/** What the runner risks on one transaction: every unit of its gas limit at its max fee, and the L1 data fee. */
export interface WorstCase {
  readonly gasLimit: bigint
  readonly maxFeePerGas: bigint
  /** OP-stack's L1 data fee for the transaction (0 where the chain charges none). */
  readonly l1FeeWei: bigint
}

/**
 * The most the runner can pay for a transaction, in wei.
 *
 * @example
 * worstCaseWei({ gasLimit: 200_000n, maxFeePerGas: 2_000_000_000n, l1FeeWei: 0n }) // 400_000_000_000_000n
 */
export function worstCaseWei(worstCase: WorstCase): bigint {
  return worstCase.gasLimit * worstCase.maxFeePerGas + worstCase.l1FeeWei
}

/**
 * Token base units worth `wei`, rounded up: the relay never under-charges by rounding.
 *
 * @example
 * weiToToken(1_000_000_000_000_000n, { numerator: 333_333_333n, denominator: 1n }) // 3_000_001n (≈3 USDC at 3,000 USDC/ETH)
 */
export function weiToToken(wei: bigint, weiPerBaseUnit: Fraction): bigint {
  return ceilDiv(wei * weiPerBaseUnit.denominator, weiPerBaseUnit.numerator)
}

/**
 * Wei that `amount` base units are worth, rounded down: a payment is never over-valued by rounding.
 *
 * @example
 * tokenToWei(3_000_000n, { numerator: 333_333_333n, denominator: 1n }) // 999_999_999_000_000n
 */
export function tokenToWei(amount: bigint, weiPerBaseUnit: Fraction): bigint {
  return (amount * weiPerBaseUnit.numerator) / weiPerBaseUnit.denominator
}

/**
 * What the relay charges for a worst case, in token base units: its wei plus `marginBps`, converted
 * at the token's price, rounded up. Quotes and payment legs are sized by this one rule.
 *
 * @example
 * chargeFor({ gasLimit: 100_000n, maxFeePerGas: 2_000_000_000n, l1FeeWei: 0n }, 2_000, { numerator: 333_333_333n, denominator: 1n }) // 720_001n
 */
export function chargeFor(worstCase: WorstCase, marginBps: number, weiPerBaseUnit: Fraction): bigint {
  return weiToToken(ceilDiv(worstCaseWei(worstCase) * BigInt(10_000 + marginBps), 10_000n), weiPerBaseUnit)
}

/** Whether a payment covers a worst case at a price, and what it would have to be. */
export interface Coverage {
  readonly covered: boolean
  /** The least payment that covers the worst case, in base units (no margin). */
  readonly requiredAmount: bigint
  readonly worstCaseWei: bigint
}

/**
 * Whether paying `amount` covers `worstCase` at the token's price: the check made at submit, before
 * every send and before every replacement. No margin: the margin is for quotes, which price ahead.
 *
 * @example
 * paymentCovers(720_001n, { gasLimit: 100_000n, maxFeePerGas: 2_000_000_000n, l1FeeWei: 0n }, price).covered // true
 */
export function paymentCovers(amount: bigint, worstCase: WorstCase, weiPerBaseUnit: Fraction): Coverage {
  const requiredAmount = weiToToken(worstCaseWei(worstCase), weiPerBaseUnit)
  return { covered: amount >= requiredAmount, requiredAmount, worstCaseWei: worstCaseWei(worstCase) }
}

/** `a / b` rounded up (for non-negative `a`, positive `b`). */
export function ceilDiv(a: bigint, b: bigint): bigint {
  return (a + b - 1n) / b
}
