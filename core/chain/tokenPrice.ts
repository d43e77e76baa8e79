import { encodeAbiParameters, getAddress, getCreate2Address, keccak256, type Address, type Hex, type PublicClient } from 'viem'
import { blameOf, BrunoFault } from './faults.ts'
import type { Network } from './networks.ts'

/** A ratio of two integers, kept exact until it is printed or applied. */
export interface Fraction {
  readonly numerator: bigint
  readonly denominator: bigint
}

const Q192 = 1n << 192n

/** keccak256 of the Uniswap V3 pool's creation code: what the periphery computes pool addresses with. */
export const POOL_INIT_CODE_HASH: Hex = '0xe34f199b19b2b4f47f68442619d555527d244f78a3297ea89325f843f87b8b54'

/**
 * A Uniswap V3 pool's address, computed as the factory creates it (CREATE2): no chain read.
 *
 * @example
 * poolAddress(factory, usdc, weth, 500) // the USDC/WETH 0.05% pool, whichever token is given first
 */
export function poolAddress(factory: Address, tokenA: Address, tokenB: Address, fee: number): Address {
  const [token0, token1] = BigInt(tokenA) < BigInt(tokenB) ? [tokenA, tokenB] : [tokenB, tokenA]
  const salt = keccak256(encodeAbiParameters([{ type: 'address' }, { type: 'address' }, { type: 'uint24' }], [token0, token1, fee]))
  return getCreate2Address({ from: factory, salt, bytecodeHash: POOL_INIT_CODE_HASH })
}

/**
 * A Uniswap V3 pool's current price (`slot0`) and in-range liquidity: what the relay prices with,
 * preflight checks and `uniswap_price` reports.
 *
 * @example
 * const [sqrtPriceX96, tick] = await client.readContract({ address: pool, abi: uniswapV3PoolAbi, functionName: 'slot0' })
 */
export const uniswapV3PoolAbi = [
  {
    type: 'function',
    name: 'slot0',
    stateMutability: 'view',
    inputs: [],
    outputs: [
      { name: 'sqrtPriceX96', type: 'uint160' },
      { name: 'tick', type: 'int24' },
      { name: 'observationIndex', type: 'uint16' },
      { name: 'observationCardinality', type: 'uint16' },
      { name: 'observationCardinalityNext', type: 'uint16' },
      { name: 'feeProtocol', type: 'uint8' },
      { name: 'unlocked', type: 'bool' },
    ],
  },
  {
    type: 'function',
    name: 'liquidity',
    stateMutability: 'view',
    inputs: [],
    outputs: [{ name: '', type: 'uint128' }],
  },
  {
    type: 'function',
    name: 'observe',
    stateMutability: 'view',
    inputs: [{ name: 'secondsAgos', type: 'uint32[]' }],
    outputs: [
      { name: 'tickCumulatives', type: 'int56[]' },
      { name: 'secondsPerLiquidityCumulativeX128s', type: 'uint160[]' },
    ],
  },
  {
    type: 'function',
    name: 'observations',
    stateMutability: 'view',
    inputs: [{ name: 'index', type: 'uint256' }],
    outputs: [
      { name: 'blockTimestamp', type: 'uint32' },
      { name: 'tickCumulative', type: 'int56' },
      { name: 'secondsPerLiquidityCumulativeX128', type: 'uint160' },
      { name: 'initialized', type: 'bool' },
    ],
  },
  {
    type: 'function',
    name: 'increaseObservationCardinalityNext',
    stateMutability: 'nonpayable',
    inputs: [{ name: 'observationCardinalityNext', type: 'uint16' }],
    outputs: [],
  },
] as const

/** One pool a token's configured path crosses. */
export interface PriceHop {
  readonly tokenIn: Address
  readonly fee: number
  readonly tokenOut: Address
}

/**
 * The spot price along hops, in base units of the last token per base unit of the first, from
 * each pool's `sqrtPriceX96`. A pool stores √(token1/token0)·2⁹⁶, token0 being the pair's lower
 * address: a hop selling token0 multiplies by sqrtP²/2¹⁹², one selling token1 by the inverse.
 *
 * @example
 * pathPrice([{ tokenIn: usdc, tokenOut: weth, sqrtPriceX96: 1446501726624926496477173928747177n }])
 * // ≈ 333_333_333.3 wei per USDC base unit when USDC is token0
 */
export function pathPrice(hops: readonly (Pick<PriceHop, 'tokenIn' | 'tokenOut'> & { readonly sqrtPriceX96: bigint })[]): Fraction {
  let numerator = 1n
  let denominator = 1n
  for (const { tokenIn, tokenOut, sqrtPriceX96 } of hops) {
    const squared = sqrtPriceX96 * sqrtPriceX96
    const sellsToken0 = BigInt(tokenIn) < BigInt(tokenOut)
    numerator *= sellsToken0 ? squared : Q192
    denominator *= sellsToken0 ? Q192 : squared
  }
  return { numerator, denominator }
}

/** The configured hops from `token` to WETH, or `undefined` when the token has no swap path. */
export function priceHops(network: Network, token: Address): PriceHop[] | undefined {
  const configured = network.config.tokens.find((candidate) => getAddress(candidate.address) === token)
  if (!configured?.swapPath) return undefined
  let tokenIn = token
  return configured.swapPath.map(({ fee, tokenOut }) => {
    const hop = { tokenIn, fee, tokenOut: getAddress(tokenOut) }
    tokenIn = hop.tokenOut
    return hop
  })
}

/** The time-weighted price the relay checks a pool's spot price against: its last this many seconds. */
export const PRICE_WINDOW_SEC = 600

/**
 * The window is averaged whole and in this many equal parts: a price pushed and held for part of the
 * window moves the whole average by that part's share, but not the parts before it.
 */
export const PRICE_WINDOW_PARTS = 4

/**
 * Wei per base unit of a token, along its configured path: WETH is 1:1; along a path, each pool's
 * price is the lowest (for the token: the least favourable to a payer) of its spot price (slot0),
 * its time-weighted price over the last `PRICE_WINDOW_SEC` (or the pool's whole history when it is
 * younger), and the time-weighted price of each of that window's `PRICE_WINDOW_PARTS` equal parts. A
 * swap that pushes a pool for one block barely moves the time-weighted price, so the relay never
 * values a payment at a price an attacker set a block before; one held for minutes moves the parts
 * it was held in, not those before it, so it must be held the whole window to move the price. A pool whose ring of observations no longer reaches back
 * the whole window, or to the pool's first observation, has had its history overwritten (a pool of
 * C observations is flushed by C swaps in C blocks): the price is refused (`BrunoFault`), never
 * taken over what is left. The window each pool's average was taken over is told to
 * `network.notePriceWindow` (a metric, and a warning when it is short). A pool read that reverts is
 * Bruno's fault (its configuration), never the caller's. The reads leave in one JSON-RPC batch; a
 * pool younger than the window costs one more.
 *
 * @example
 * const price = await readWeiPerBaseUnit(network, usdc)
 * const usdcForGas = (costWei * price.denominator + price.numerator - 1n) / price.numerator
 */
export async function readWeiPerBaseUnit(network: Network, token: Address): Promise<Fraction> {
  if (token === getAddress(network.config.weth)) return { numerator: 1n, denominator: 1n }
  const hops = priceHops(network, token)
  if (!hops) throw new Error(`no swap path configured for ${token}`)
  const factory = getAddress(network.config.uniswap.factory)
  const prices = await Promise.all(hops.map((hop) => readPoolPrice(network, poolAddress(factory, hop.tokenIn, hop.tokenOut, hop.fee), hop)))
  return prices.reduce((product, price) => ({ numerator: product.numerator * price.numerator, denominator: product.denominator * price.denominator }))
}

/** One hop's price: the lowest (for `tokenIn`) of the pool's spot price and its time-weighted ones. */
async function readPoolPrice(network: Network, pool: Address, hop: PriceHop): Promise<Fraction> {
  try {
    const slot0Read = network.client.readContract({ address: pool, abi: uniswapV3PoolAbi, functionName: 'slot0' })
    const [slot0, averageTicks] = await Promise.all([slot0Read, readAverageTicks(network, pool, slot0Read)])
    const spot = pathPrice([{ ...hop, sqrtPriceX96: slot0[0] }])
    const averages = averageTicks.map((tick) => pathPrice([{ ...hop, sqrtPriceX96: sqrtPriceX96AtTick(tick) }]))
    // The lowest: a payment is never valued above what the pool has held through the window.
    return averages.reduce((lowest, price) => (price.numerator * lowest.denominator < lowest.numerator * price.denominator ? price : lowest), spot)
  } catch (error) {
    // A revert here is the pool's (or the configured factory's), not the caller's call: Bruno's to mend.
    if (!(error instanceof BrunoFault) && blameOf(error).side === 'caller') {
      throw new BrunoFault(`cannot read the price of the pool ${pool} (${hop.tokenIn}→${hop.tokenOut}, fee ${hop.fee}): its slot0() or observe() reverted`, { cause: error })
    }
    throw error
  }
}

/**
 * A pool's average ticks over `PRICE_WINDOW_SEC` (or over its whole history when it has less: its
 * oldest observation read then, which must be the pool's first, with zero cumulatives): the whole
 * window's, then each of its `PRICE_WINDOW_PARTS` parts' (one `observe` for all), rounded toward
 * negative infinity, as Uniswap's oracle library does.
 */
async function readAverageTicks(network: Network, pool: Address, slot0Read: Promise<readonly [bigint, number, number, number, number, number, boolean]>): Promise<number[]> {
  const { client } = network
  // Only a revert ('OLD': younger than the window) reads on from the oldest observation; a node that failed stays a failure.
  const whole = await client.readContract({ address: pool, abi: uniswapV3PoolAbi, functionName: 'observe', args: [windowPoints(PRICE_WINDOW_SEC)] }).then(
    ([cumulatives]) => cumulatives,
    (error: unknown) => {
      if (blameOf(error).side !== 'caller') throw error
      return undefined
    },
  )
  if (whole) {
    network.notePriceWindow(pool, PRICE_WINDOW_SEC)
    return averagesOf(whole, windowPoints(PRICE_WINDOW_SEC))
  }
  const [[, tickNow, index, cardinality], block] = await Promise.all([slot0Read, client.getBlock({ blockTag: 'latest' })])
  const oldest = await readOldestObservation(client, pool, index, cardinality)
  const window = Math.max(0, Number(block.timestamp) - oldest.timestamp)
  if (!oldest.first) {
    throw new BrunoFault(
      `cannot price through the pool ${pool} now: its price history covers only the last ${window} s of the ${PRICE_WINDOW_SEC} s window ` +
        `(its ${cardinality} observations were overwritten by recent swaps, which a burst of swaps can do on purpose); try again later`,
    )
  }
  network.notePriceWindow(pool, window)
  if (window === 0) return [tickNow]
  const points = windowPoints(window)
  const [cumulatives] = await client.readContract({ address: pool, abi: uniswapV3PoolAbi, functionName: 'observe', args: [points] })
  return averagesOf(cumulatives, points)
}

/**
 * The seconds ago `observe` is asked for a window of `window` seconds: its start, the ends of its
 * parts, and now (a part shorter than a second is left out).
 *
 * @example
 * windowPoints(600) // [600, 450, 300, 150, 0]
 */
export function windowPoints(window: number): number[] {
  const points = Array.from({ length: PRICE_WINDOW_PARTS + 1 }, (_, index) => Math.floor((window * (PRICE_WINDOW_PARTS - index)) / PRICE_WINDOW_PARTS))
  return points.filter((point, index) => index === 0 || point !== points[index - 1])
}

/** The whole window's average tick, then each part's, from the tick cumulatives `observe` answered at `points`. */
function averagesOf(cumulatives: readonly bigint[], points: readonly number[]): number[] {
  const last = points.length - 1
  const whole = averageOf(cumulatives[0]!, cumulatives[last]!, points[0]! - points[last]!)
  const parts = points.slice(1).map((point, index) => averageOf(cumulatives[index]!, cumulatives[index + 1]!, points[index]! - point))
  return parts.length > 1 ? [whole, ...parts] : [whole]
}

/** The average tick between two tick cumulatives `seconds` apart, rounded toward negative infinity. */
function averageOf(from: bigint, to: bigint, seconds: number): number {
  const delta = to - from
  const span = BigInt(seconds)
  let tick = delta / span
  if (delta < 0n && delta % span !== 0n) tick -= 1n
  return Number(tick)
}

/**
 * The oldest observation a pool's ring still holds: the slot after the last written one (`index`,
 * from slot0), or slot 0 while the ring has not wrapped yet. `first` when it is the pool's first
 * observation (written when the pool was initialised, zero cumulatives): its history is whole;
 * otherwise what came before `timestamp` was overwritten.
 *
 * @example
 * const [, , index, cardinality] = await client.readContract({ address: pool, abi: uniswapV3PoolAbi, functionName: 'slot0' })
 * const { timestamp, first } = await readOldestObservation(client, pool, index, cardinality)
 */
export async function readOldestObservation(client: PublicClient, pool: Address, index: number, cardinality: number): Promise<{ timestamp: number; first: boolean }> {
  let oldest = await client.readContract({ address: pool, abi: uniswapV3PoolAbi, functionName: 'observations', args: [BigInt((index + 1) % cardinality)] })
  if (!oldest[3]) oldest = await client.readContract({ address: pool, abi: uniswapV3PoolAbi, functionName: 'observations', args: [0n] })
  return { timestamp: oldest[0], first: oldest[1] === 0n && oldest[2] === 0n }
}

/**
 * √(1.0001^tick) · 2⁹⁶, the pool's price at a tick in its own fixed-point form. Computed in floating
 * point: 53 bits of precision, far finer than a tick's 0.01 %.
 *
 * @example
 * sqrtPriceX96AtTick(0) // 79228162514264337593543950336n (2⁹⁶: a price of 1)
 */
export function sqrtPriceX96AtTick(tick: number): bigint {
  return BigInt(Math.round(Math.pow(1.0001, tick / 2) * 2 ** 96))
}
