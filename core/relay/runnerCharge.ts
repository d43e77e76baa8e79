import type { Fraction } from '../chain/tokenPrice.ts'
import { ceilDiv, tokenToWei, weiToToken } from '../charge/pricing.ts'
import { encodeRunnerCall, KEEP_PAYMENT, RUNNER_SETTLE_GAS, type RunnerCharge, type RunnerRelay } from './runnerCall.ts'
import { calldataGas } from './runnerTransaction.ts'

/**
 * A gas figure the charge carries at its most: no transaction may use more than 2²⁴ gas (EIP-7825),
 * so three bytes of `0xff` count at least the calldata any real figure costs.
 */
const GAS_PLACEHOLDER = 0xffffffn

/**
 * The charge as it is estimated before its price is known: every field at a value whose bytes cost
 * at least the real one's (eight bytes of `0xff` for the price and the L1 fee, far above either), so
 * that a gas limit estimated with it is never short. Its price leaves nothing to refund, but the
 * Runner reserves the refund's gas before the call whatever happens after, so the estimate counts it.
 * With no refund (`refundGas` 0) it is `KEEP_PAYMENT`, the charge that will be signed.
 */
export function estimateCharge(refundGas: bigint, markupBps: number): RunnerCharge {
  if (refundGas === 0n) return KEEP_PAYMENT
  return { baseGas: GAS_PLACEHOLDER, floorGas: GAS_PLACEHOLDER, l1FeeWei: 2n ** 64n - 1n, unitsPerEther: 2n ** 64n - 1n, markupBps: BigInt(markupBps), refundGas }
}

/**
 * The charge that measures the payee's refund in a simulation: no gas price is given there, so
 * nothing is charged and the whole payment is refunded with up to `REFUND_PROBE_GAS`; the Runner
 * answers what the refund took (0 when the payee made none: no refund can be asked of it).
 */
export const REFUND_PROBE_GAS = 100_000n
export const REFUND_PROBE_CHARGE: RunnerCharge = { baseGas: 0n, floorGas: 0n, l1FeeWei: 0n, unitsPerEther: 0n, markupBps: 0n, refundGas: REFUND_PROBE_GAS }

/**
 * Gas above the measured refund that its cap allows: the refund at inclusion may meet other state
 * than in simulation. Charged whole, like the cap.
 */
export const REFUND_GAS_MARGIN = 250n

/**
 * A refund's cap as it is counted before anything is signed that a probe could measure (a quote, a
 * delegate batch tool's price): USDC's (6,773 measured, + the margin) rounded up. A relay signs the
 * cap its probe measured.
 */
export const QUOTED_REFUND_GAS = 7_100n

/**
 * The charge the runner signs into a relay (contracts/Runner.sol, `Charge`): the gas the transaction
 * costs outside the Runner's code (21,000, its calldata at its dearest, its authorizations'), the
 * EIP-7623 floor, the L1 data fee as the runner priced it (`readL1DataFee`: with its headroom), the
 * token's base units per ether at the price of this send (rounded up), the markup, and the refund's
 * cap. With no refund (`refundGas` 0) it is `KEEP_PAYMENT`: the payee keeps the payment. The figures
 * in the calldata are counted at their most, so the count errs by a few gas, for the runner.
 *
 * @example
 * runnerCharge({ relay, callGas: 180_000n, authorizationGas: 0n, l1FeeWei: 0n, weiPerBaseUnit, markupBps: 500, refundGas: 7_023n })
 * // { baseGas: 27_652n, floorGas: 36_130n, l1FeeWei: 0n, unitsPerEther: 3_000_000_000n, markupBps: 500n, refundGas: 7_023n }
 */
export function runnerCharge(parts: {
  relay: RunnerRelay
  callGas: bigint
  authorizationGas: bigint
  l1FeeWei: bigint
  weiPerBaseUnit: Fraction
  markupBps: number
  refundGas: bigint
}): RunnerCharge {
  if (parts.refundGas === 0n) return KEEP_PAYMENT
  const priced = {
    l1FeeWei: parts.l1FeeWei,
    unitsPerEther: weiToToken(10n ** 18n, parts.weiPerBaseUnit),
    markupBps: BigInt(parts.markupBps),
    refundGas: parts.refundGas,
  }
  const calldata = calldataGas(encodeRunnerCall(parts.relay, parts.callGas, { ...priced, baseGas: GAS_PLACEHOLDER, floorGas: GAS_PLACEHOLDER }))
  return {
    baseGas: 21_000n + calldata + parts.authorizationGas,
    // EIP-7623: 10 gas per calldata token, a token per zero byte and four per other (a quarter of the calldata gas).
    floorGas: 21_000n + (10n * calldata) / 4n,
    ...priced,
  }
}

/**
 * What the Runner's settlement usually uses, for an expected charge (not a bound: the worst case
 * counts the settlement's reserve). Measured on the devnet with FiatToken v2.2 (test/refunds.test.ts
 * holds the expected charges within a tenth of the charged ones).
 */
export const EXPECTED_SETTLEMENT_GAS = 12_000n

/**
 * The gas a relay priced at the limit `gas` is expected to use: the limit without its headroom
 * (`gasLimitBps`) less what the Runner reserves and does not spend — the stipend `callGas` and its
 * 1/64 beyond what the calls use (`callGasUsed`), the settlement's reserve beyond its usual gas, the
 * refund's 1/64. Quote's expected charge for a batch, and a batch tool's before signing, count it.
 *
 * @example
 * expectedRelayGas({ gas: 250_000n, gasLimitBps: 12_500, callGas: 80_000n, callGasUsed: 60_000n, refundGas: 7_100n }) // 165_619n
 */
export function expectedRelayGas(parts: { gas: bigint; gasLimitBps: number; callGas: bigint; callGasUsed: bigint; refundGas: bigint }): bigint {
  const estimate = (parts.gas * 10_000n) / BigInt(parts.gasLimitBps)
  const unspentStipend = parts.callGas + parts.callGas / 63n - parts.callGasUsed
  const slack = unspentStipend + RUNNER_SETTLE_GAS - EXPECTED_SETTLEMENT_GAS + parts.refundGas / 63n
  return estimate > slack + 21_000n ? estimate - slack : 21_000n
}

/**
 * What the Runner would charge of `amount` for a relay that uses `gas` at `feePerGas` under `charge`: its
 * formula (contracts/Runner.sol, `_settle`) run ahead, for a quote's expected charge. With no refund
 * (`refundGas` 0) the payee keeps the whole payment.
 *
 * @example
 * expectedCharge(charge, 140_000n, 1_100_000_000n, 1_000_000n) // 485_100n: 140,000 gas at 1.1 gwei, 3,000 USDC/ETH, + 5 %
 */
export function expectedCharge(charge: RunnerCharge, gas: bigint, feePerGas: bigint, amount: bigint): bigint {
  if (charge.refundGas === 0n) return amount
  const counted = gas > charge.floorGas ? gas : charge.floorGas
  const cost = ceilDiv((counted * feePerGas + charge.l1FeeWei) * charge.unitsPerEther, 10n ** 18n)
  const priced = ceilDiv(cost * (10_000n + charge.markupBps), 10_000n)
  return priced < amount ? priced : amount
}

/**
 * Whether the refund a relay would make is worth less than the gas it takes (issue 48: no refund
 * dearer than itself): what would come back of `amount` under `charge`, at `gas` and `feePerGas`, is
 * worth no more wei at `weiPerBaseUnit` than the refund's cap (`charge.refundGas`) costs at that fee.
 * Then the relay signs `KEEP_PAYMENT`: the payee keeps the payment, and the payer is not charged the
 * gas of a refund smaller than it.
 *
 * @example
 * refundUnderItsGas(charge, 180_000n, 1_100_000_000n, 600_000n, price) // true: 600,000 units leave ≈ 3 units back, 7,023 gas cost ≈ 23
 */
export function refundUnderItsGas(charge: RunnerCharge, gas: bigint, feePerGas: bigint, amount: bigint, weiPerBaseUnit: Fraction): boolean {
  if (charge.refundGas === 0n) return false
  const refund = amount - expectedCharge(charge, gas, feePerGas, amount)
  return tokenToWei(refund, weiPerBaseUnit) <= charge.refundGas * feePerGas
}

/** The refund's cap for a simulation's measure: none when the payee made no refund, else the measure and the margin. */
export function refundCap(refundGasUsed: bigint): bigint {
  return refundGasUsed === 0n ? 0n : refundGasUsed + REFUND_GAS_MARGIN
}
