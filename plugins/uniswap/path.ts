import { Type, type Static } from '@sinclair/typebox'
import { encodePacked, formatUnits, getAddress, type Address, type Hex } from 'viem'
import { Address as AddressSchema, configuredTokenInfo, HexData, requireToken, ToolError, type NetworkConfig, type ResolvedToken } from '../../core/plugin.ts'

/** One pool a swap crosses: `tokenIn` in, `tokenOut` out, through the pool of that pair and fee. */
export interface SwapHop {
  readonly tokenIn: Address
  readonly fee: number
  readonly tokenOut: Address
}

/** A configured token's way to WETH: the hops, and the same packed as a V3 path. */
export interface SwapRoute {
  readonly token: ResolvedToken
  readonly hops: readonly SwapHop[]
  readonly encoded: Hex
}

/**
 * A configured token and its configured hops to the network's WETH. Refuses, naming the problem,
 * a token the network does not know, an address that is not configured (a route is config, never
 * guessed) and a configured token without a `swapPath`.
 *
 * @example
 * swapRoute(network.config, 'USDC')
 * // { token: { address: '0xA0b8…', symbol: 'USDC', decimals: 6 }, hops: [{ tokenIn: '0xA0b8…', fee: 500, tokenOut: '0xC02a…' }], encoded: '0xa0b8…' }
 */
export function swapRoute(network: NetworkConfig, token: string): SwapRoute {
  const found = requireToken(network, token)
  if (!found.configured) {
    throw new ToolError(`${found.address} is not a configured token on ${network.name}: only configured tokens have a swap path`)
  }
  const swapPath = found.configured.swapPath
  if (!swapPath) {
    const routable = network.tokens.filter((candidate) => candidate.swapPath).map((candidate) => candidate.symbol)
    throw new ToolError(
      `${found.configured.symbol} has no configured swap path to WETH on ${network.name}` +
        (routable.length > 0 ? ` (tokens with one: ${routable.join(', ')})` : ' (no token there has one)'),
    )
  }
  let tokenIn = found.address
  const hops = swapPath.map(({ fee, tokenOut }) => {
    const hop = { tokenIn, fee, tokenOut: getAddress(tokenOut) }
    tokenIn = hop.tokenOut
    return hop
  })
  return { token: configuredTokenInfo({ ...found, configured: found.configured }), hops, encoded: encodeV3Path(hops) }
}

/**
 * Packs hops the way Uniswap V3 routers and quoters read a path: the first token (20 bytes),
 * then for each hop its fee (uint24, 3 bytes) and the token it reaches (20 bytes).
 *
 * @example
 * encodeV3Path([{ tokenIn: '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48', fee: 500, tokenOut: '0xC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2' }])
 * // '0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb480001f4c02aaa39b223fe8d0a0e5c4f27ead9083c756cc2'
 */
export function encodeV3Path(hops: readonly SwapHop[]): Hex {
  const first = hops[0]
  if (!first) throw new Error('encodeV3Path: a path needs at least one hop')
  const types: ('address' | 'uint24')[] = ['address']
  const values: (Address | number)[] = [first.tokenIn]
  for (const hop of hops) {
    types.push('uint24', 'address')
    values.push(hop.fee, hop.tokenOut)
  }
  return encodePacked(types, values)
}

/** A swap path as tools report it: readable, hop by hop, and as the bytes the router takes. */
export const SwapPath = Type.Object(
  {
    route: Type.String(),
    hops: Type.Array(Type.Object({ tokenIn: AddressSchema, fee: Type.Integer(), tokenOut: AddressSchema }, { additionalProperties: false })),
    encoded: HexData,
  },
  { additionalProperties: false, description: 'the token\'s configured path to WETH' },
)

/**
 * The `SwapPath` a tool returns for a route.
 *
 * @example
 * describePath(network.config, swapRoute(network.config, 'USDC')).route // 'USDC -(0.05%)-> WETH'
 */
export function describePath(network: NetworkConfig, { token, hops, encoded }: SwapRoute): Static<typeof SwapPath> {
  const steps = hops.map((hop) => `-(${formatUnits(BigInt(hop.fee), 4)}%)-> ${label(network, hop.tokenOut)}`)
  return { route: [label(network, token.address), ...steps].join(' '), hops: hops.map((hop) => ({ ...hop })), encoded }
}

// A token's configured symbol; WETH by its role when the config lists it under no symbol.
function label(network: NetworkConfig, address: Address): string {
  const configured = network.tokens.find((token) => getAddress(token.address) === address)
  if (configured) return configured.symbol
  return getAddress(network.weth) === address ? 'WETH' : address
}
