import t from 'tap'
import { ceilDiv, chargeFor, paymentCovers, tokenToWei, weiToToken, worstCaseWei } from '../../core/charge/pricing.ts'

// The relay's money rules (core/charge/pricing.ts) on hand-computed figures: each rounding goes the
// runner's way (costs up, payments' value down), and one unit either side of each boundary.

const price = { numerator: 333_333_333n, denominator: 1n } // ≈3,000 USDC per ETH, wei per USDC base unit
const worst = { gasLimit: 100_000n, maxFeePerGas: 2_000_000_000n, l1FeeWei: 0n }

t.test('ceilDiv rounds up, and only when there is a remainder', async (t) => {
  t.equal(ceilDiv(0n, 7n), 0n)
  t.equal(ceilDiv(1n, 7n), 1n)
  t.equal(ceilDiv(6n, 7n), 1n)
  t.equal(ceilDiv(7n, 7n), 1n)
  t.equal(ceilDiv(8n, 7n), 2n)
  t.equal(ceilDiv(14n, 7n), 2n)
  t.equal(ceilDiv(15n, 7n), 3n)
  t.equal(ceilDiv(10n, 1n), 10n)
})

t.test('worstCaseWei: every unit of the gas limit at the max fee, plus the L1 fee', async (t) => {
  t.equal(worstCaseWei({ gasLimit: 200_000n, maxFeePerGas: 2_000_000_000n, l1FeeWei: 0n }), 400_000_000_000_000n)
  t.equal(worstCaseWei({ gasLimit: 3n, maxFeePerGas: 5n, l1FeeWei: 7n }), 22n)
  t.equal(worstCaseWei({ gasLimit: 0n, maxFeePerGas: 5n, l1FeeWei: 7n }), 7n)
})

t.test('weiToToken rounds up: the relay never under-charges', async (t) => {
  // 1e15 wei / 333,333,333 wei per unit = 3,000,000.003 → 3,000,001
  t.equal(weiToToken(1_000_000_000_000_000n, price), 3_000_001n)
  // an exact multiple stays exact
  t.equal(weiToToken(333_333_333n * 5n, price), 5n)
  t.equal(weiToToken(333_333_333n * 5n + 1n, price), 6n)
  t.equal(weiToToken(333_333_333n * 5n - 1n, price), 5n)
  // the denominator multiplies the wei: 10 wei at 3/2 wei per unit = 6.67 → 7 units
  t.equal(weiToToken(10n, { numerator: 3n, denominator: 2n }), 7n)
  t.equal(weiToToken(9n, { numerator: 3n, denominator: 2n }), 6n)
  t.equal(weiToToken(0n, price), 0n)
})

t.test('tokenToWei rounds down: a payment is never over-valued', async (t) => {
  t.equal(tokenToWei(3_000_000n, price), 999_999_999_000_000n)
  // 7 units at 3/2 wei per unit = 10.5 → 10
  t.equal(tokenToWei(7n, { numerator: 3n, denominator: 2n }), 10n)
  t.equal(tokenToWei(6n, { numerator: 3n, denominator: 2n }), 9n)
  t.equal(tokenToWei(0n, price), 0n)
})

t.test('chargeFor: the worst case plus the margin, converted and rounded up', async (t) => {
  // 2e14 wei × 1.2 = 2.4e14 wei; / 333,333,333 = 720,000.00072 → 720,001
  t.equal(chargeFor(worst, 2_000, price), 720_001n)
  // no margin: 2e14 / 333,333,333 = 600,000.0006 → 600,001
  t.equal(chargeFor(worst, 0, price), 600_001n)
  // the margin's wei is rounded up before the conversion: 7 wei × 1.0001 = 7.0007 → 8 wei, at 1 wei per unit
  t.equal(chargeFor({ gasLimit: 7n, maxFeePerGas: 1n, l1FeeWei: 0n }, 1, { numerator: 1n, denominator: 1n }), 8n)
  // …and exact products stay exact: 10,000 wei × 1.0001 = 10,001 wei
  t.equal(chargeFor({ gasLimit: 10_000n, maxFeePerGas: 1n, l1FeeWei: 0n }, 1, { numerator: 1n, denominator: 1n }), 10_001n)
  // the L1 fee is charged with the margin: (100 + 50) wei × 1.5 = 225
  t.equal(chargeFor({ gasLimit: 10n, maxFeePerGas: 10n, l1FeeWei: 50n }, 5_000, { numerator: 1n, denominator: 1n }), 225n)
  // a price with a denominator: 225 wei at 3/2 wei per unit = 150 units
  t.equal(chargeFor({ gasLimit: 10n, maxFeePerGas: 10n, l1FeeWei: 50n }, 5_000, { numerator: 3n, denominator: 2n }), 150n)
})

t.test('paymentCovers: exactly the worst case (no margin) covers it; one unit less does not', async (t) => {
  const required = 600_001n
  t.same(paymentCovers(required, worst, price), { covered: true, requiredAmount: required, worstCaseWei: 200_000_000_000_000n })
  t.same(paymentCovers(required - 1n, worst, price), { covered: false, requiredAmount: required, worstCaseWei: 200_000_000_000_000n })
  t.equal(paymentCovers(required + 1n, worst, price).covered, true)
  // the L1 fee counts: 1,000 wei of gas and 500 of L1 fee at 1 wei per unit
  const withL1 = { gasLimit: 100n, maxFeePerGas: 10n, l1FeeWei: 500n }
  t.same(paymentCovers(1_500n, withL1, { numerator: 1n, denominator: 1n }), { covered: true, requiredAmount: 1_500n, worstCaseWei: 1_500n })
  t.same(paymentCovers(1_499n, withL1, { numerator: 1n, denominator: 1n }), { covered: false, requiredAmount: 1_500n, worstCaseWei: 1_500n })
})

