import type { Address } from 'viem'
import { expectedFeePerGas, readFees } from '../chain/fees.ts'
import type { Network } from '../chain/networks.ts'
import { readWeiPerBaseUnit, type Fraction } from '../chain/tokenPrice.ts'
import { chargeFor } from './pricing.ts'

/** A payment token as the relay accepts it: configured, priced along a swap path (or WETH). */
export interface PaymentToken {
  readonly address: Address
  readonly symbol: string
  readonly decimals: number
}

/**
 * Prices gas in one payment token at the fees and the pool price read when it was made, plus
 * the network's configured margin: how a group sizes a payment leg it builds itself.
 */
export interface GasPricer {
  readonly token: PaymentToken
  /** The max fee per gas the price is based on (wei). */
  readonly feePerGas: bigint
  /** What a transaction pays per gas if the next block keeps the latest base fee (wei): an expected charge's fee. */
  readonly expectedFeePerGas: bigint
  /** The configured margin added to the cost, in basis points. */
  readonly marginBps: number
  /** The token's price: wei per base unit. */
  readonly weiPerBaseUnit: Fraction
  /** What `gas` (and an L1 data fee, in wei) costs in the token's base units, margin included, rounded up. */
  amountFor(gas: bigint, l1FeeWei?: bigint): bigint
}

/**
 * Reads current fees and the token's price (in parallel) and returns a pricer fixed at them, so
 * a tool that measures twice prices both measurements alike.
 *
 * @example
 * const pricer = await gasPricer(network, usdc)
 * pricer.amountFor(120_000n) // 864_001n: 0.864001 USDC for 120k gas at 2 gwei, 20% margin, 3,000 USDC/ETH
 */
export async function gasPricer(network: Network, token: PaymentToken): Promise<GasPricer> {
  const [fees, weiPerBaseUnit] = await Promise.all([readFees(network.client), readWeiPerBaseUnit(network, token.address)])
  const feePerGas = fees.maxFeePerGas
  const marginBps = network.config.margins.quoteBps
  return { token, feePerGas, expectedFeePerGas: expectedFeePerGas(fees), marginBps, weiPerBaseUnit, amountFor: (gas, l1FeeWei = 0n) => chargeFor({ gasLimit: gas, maxFeePerGas: feePerGas, l1FeeWei }, marginBps, weiPerBaseUnit) }
}
