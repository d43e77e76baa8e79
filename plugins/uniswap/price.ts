import { Type, type TSchema } from '@sinclair/typebox'
import { formatUnits, getAddress, zeroAddress } from 'viem'
import { Address as AddressSchema, BaseUnits, BlockNumber, defineTool, pathPrice, TokenArgument, uniswapV3PoolAbi, TokenInfo, ToolError, type Fraction, type Network } from '../../core/plugin.ts'
import { uniswapV3FactoryAbi } from './abi.ts'
import { describePath, swapRoute, SwapPath, type SwapHop } from './path.ts'

const WETH_DECIMALS = 18

/** Significant digits of the human prices (exact arithmetic on slot0, cut there); `raw` has the integers. */
const SIGNIFICANT_DIGITS = 18

/**
 * A positive fraction as a decimal string with `significantDigits` significant digits, rounded
 * down (an integer part longer than that is printed whole), trailing zeros dropped.
 *
 * @example
 * formatFraction({ numerator: 1n, denominator: 3000n }, 6) // '0.000333333'
 * formatFraction({ numerator: 3000n, denominator: 1n }, 6) // '3000'
 */
export function formatFraction({ numerator, denominator }: Fraction, significantDigits: number): string {
  if (numerator === 0n) return '0'
  const whole = numerator / denominator
  let decimals: number
  if (whole > 0n) {
    decimals = Math.max(0, significantDigits - whole.toString().length)
  } else {
    // Leading zeros after the point do not count as significant.
    let zeros = 0
    while (numerator * 10n ** BigInt(zeros + 1) < denominator) zeros++
    decimals = zeros + significantDigits
  }
  return formatUnits((numerator * 10n ** BigInt(decimals)) / denominator, decimals)
}

/** The prices `uniswap_price` reports: see its output schema. */
export interface SpotPrices {
  readonly ethPerToken: string
  readonly tokenPerEth: string
  readonly raw: { readonly weiPerToken: string; readonly baseUnitsPerEth: string }
}

/**
 * The prices `uniswap_price` reports, from the path's raw price (WETH wei per token base unit)
 * and the token's decimals.
 *
 * @example
 * spotPrices({ numerator: 10n ** 18n, denominator: 3_000_000_000n }, 6)
 * // { ethPerToken: '0.000333333333333333333', tokenPerEth: '3000', raw: { weiPerToken: '333333333333333', baseUnitsPerEth: '3000000000' } }
 */
export function spotPrices(weiPerBaseUnit: Fraction, decimals: number): SpotPrices {
  const tokenUnit = 10n ** BigInt(decimals)
  const ethUnit = 10n ** BigInt(WETH_DECIMALS)
  const ethPerToken = { numerator: weiPerBaseUnit.numerator * tokenUnit, denominator: weiPerBaseUnit.denominator * ethUnit }
  return {
    ethPerToken: formatFraction(ethPerToken, SIGNIFICANT_DIGITS),
    tokenPerEth: formatFraction({ numerator: ethPerToken.denominator, denominator: ethPerToken.numerator }, SIGNIFICANT_DIGITS),
    raw: {
      weiPerToken: ((weiPerBaseUnit.numerator * tokenUnit) / weiPerBaseUnit.denominator).toString(),
      baseUnitsPerEth: ((weiPerBaseUnit.denominator * ethUnit) / weiPerBaseUnit.numerator).toString(),
    },
  }
}

const PoolState = Type.Object(
  {
    address: AddressSchema,
    fee: Type.Integer(),
    token0: AddressSchema,
    token1: AddressSchema,
    sqrtPriceX96: Type.String({ description: 'slot0\'s, decimal' }),
    tick: Type.Integer(),
    liquidity: Type.String({ description: 'in range, decimal' }),
  },
  { additionalProperties: false },
)

/**
 * `uniswap_price`: the spot price of a configured token in ETH along its configured path.
 *
 * @example
 * registry.addGroup({ name: 'uniswap', order: 50, instructions, tools: [uniswapPrice(app.bruno.chainArgument)] })
 */
export const uniswapPrice = (chain: TSchema) =>
  defineTool({
    name: 'uniswap_price',
    title: 'Uniswap spot price in ETH',
    description:
      'Reads the Uniswap V3 spot price of a configured token in ETH along its configured path, every pool at one ' +
      'block: the mid price (no fee, no price impact; uniswap_swap_to_eth quotes what a swap pays), rounded down.',
    input: Type.Object(
      {
        chain,
        token: TokenArgument,
      },
      { additionalProperties: false },
    ),
    output: Type.Object(
      {
        token: TokenInfo,
        weth: AddressSchema,
        blockNumber: BlockNumber,
        path: SwapPath,
        pools: Type.Array(PoolState),
        ethPerToken: Type.String({ description: 'ETH for 1 whole token' }),
        tokenPerEth: Type.String({ description: 'whole tokens for 1 ETH' }),
        raw: Type.Object(
          {
            weiPerToken: BaseUnits,
            baseUnitsPerEth: BaseUnits,
          },
          { additionalProperties: false },
        ),
      },
      { additionalProperties: false },
    ),
    annotations: { readOnlyHint: true, openWorldHint: true },
    handler: async (args, { networks }) => {
      // The schema admits only configured network names.
      const network = networks.get(args.chain as string)
      const route = swapRoute(network.config, args.token)
      const path = describePath(network.config, route)
      const { blockNumber, pools } = await readPools(network, route.hops, path.route)
      return {
        token: route.token,
        weth: getAddress(network.config.weth),
        blockNumber: blockNumber.toString(),
        path,
        pools: pools.map((pool) => ({
          address: pool.address,
          fee: pool.fee,
          token0: pool.token0,
          token1: pool.token1,
          sqrtPriceX96: pool.sqrtPriceX96.toString(),
          tick: pool.tick,
          liquidity: pool.liquidity.toString(),
        })),
        ...spotPrices(pathPrice(pools), route.token.decimals),
      }
    },
  })

/**
 * Each hop's pool and state in two round trips (the client batches JSON-RPC requests made
 * together): the block and every `getPool`, then every `slot0` and `liquidity` at that block, so
 * the hops of a path are priced at the same moment.
 */
async function readPools(network: Network, hops: readonly SwapHop[], route: string) {
  const { client } = network
  const factory = getAddress(network.config.uniswap.factory)
  const [blockNumber, located] = await Promise.all([
    client.getBlockNumber({ cacheTime: 0 }),
    Promise.all(
      hops.map(async (hop) => ({
        hop,
        address: await client.readContract({ address: factory, abi: uniswapV3FactoryAbi, functionName: 'getPool', args: [hop.tokenIn, hop.tokenOut, hop.fee] }),
      })),
    ),
  ])
  const pools = await Promise.all(
    located.map(async ({ hop, address }) => {
      if (address === zeroAddress) {
        throw new ToolError(`no Uniswap V3 pool for ${hop.tokenIn}/${hop.tokenOut} at fee ${hop.fee} on ${network.name}: the configured path ${route} cannot be priced`)
      }
      const [[sqrtPriceX96, tick], liquidity] = await Promise.all([
        client.readContract({ address, abi: uniswapV3PoolAbi, functionName: 'slot0', blockNumber }),
        client.readContract({ address, abi: uniswapV3PoolAbi, functionName: 'liquidity', blockNumber }),
      ])
      if (sqrtPriceX96 === 0n) throw new ToolError(`the Uniswap V3 pool ${address} of ${route} on ${network.name} is not initialized: it has no price`)
      const [token0, token1] = BigInt(hop.tokenIn) < BigInt(hop.tokenOut) ? [hop.tokenIn, hop.tokenOut] : [hop.tokenOut, hop.tokenIn]
      return { ...hop, address, token0, token1, sqrtPriceX96, tick, liquidity }
    }),
  )
  return { blockNumber, pools }
}
