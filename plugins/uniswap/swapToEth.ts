import { Type, type TSchema } from '@sinclair/typebox'
import { BaseError, ContractFunctionRevertedError, encodeFunctionData, formatEther, formatUnits, getAddress, type Address, type Hex } from 'viem'
import { Address as AddressSchema, Approvals, BaseUnits, Call, Calls, defineTool, described, requireAddress, sameShapeAs, toBaseUnits, TokenAmount, TokenArgument, TokenInfo, ToolError, type Network } from '../../core/plugin.ts'
import { quoterV2Abi, swapRouter02Abi } from './abi.ts'
import { describePath, swapRoute, SwapPath } from './path.ts'

/**
 * SwapRouter02's `Constants.ADDRESS_THIS`: as a swap's recipient, the router keeps the output
 * itself, so the `unwrapWETH9` that follows in the same multicall can turn it into ETH.
 */
const ROUTER_ITSELF = '0x0000000000000000000000000000000000000002'

/** The most slippage a caller may allow a swap (SPEC §6: `slippageBps` 0–5000). */
export const MAX_SLIPPAGE_BPS = 5_000

/**
 * The least ETH a swap may pay out: `expectedOut × (10000 − slippageBps) / 10000`, rounded down.
 *
 * @example
 * minimumOutAfterSlippage(1_000_000n, 50) // 995_000n
 */
export function minimumOutAfterSlippage(expectedOut: bigint, slippageBps: number): bigint {
  return (expectedOut * BigInt(10_000 - slippageBps)) / 10_000n
}

/**
 * The one call that swaps `amountIn` of a path's first token to native ETH for `recipient`:
 * SwapRouter02 `multicall([exactInput({path, recipient: router, amountIn, amountOutMinimum: 0}),
 * unwrapWETH9(minimumOut, recipient)])`. The floor sits on the unwrap, which checks the WETH the
 * swap left in the router: less than `minimumOut` reverts the whole multicall.
 *
 * The multicall without a deadline is chosen on purpose: `minimumOut` already bounds what the
 * account accepts, and these calls travel inside a batch that carries its own deadline (Calibur's
 * signed batch, Bruno's submission); a second clock would only make a slowly signed batch revert.
 *
 * @example
 * encodeSwapToEth({ router: '0x68b3…Fc45', path: '0xa0b8…0001f4c02a…6cc2', amountIn: 10_000_000n, minimumOut: 3_300_000_000_000_000n, recipient: '0x7099…79C8' })
 * // { to: '0x68b3…Fc45', value: '0', data: '0xac9650d8…' }
 */
export function encodeSwapToEth({
  router,
  path,
  amountIn,
  minimumOut,
  recipient,
}: {
  router: Address
  path: Hex
  amountIn: bigint
  minimumOut: bigint
  recipient: Address
}): Call {
  const swap = encodeFunctionData({
    abi: swapRouter02Abi,
    functionName: 'exactInput',
    args: [{ path, recipient: ROUTER_ITSELF, amountIn, amountOutMinimum: 0n }],
  })
  const unwrap = encodeFunctionData({ abi: swapRouter02Abi, functionName: 'unwrapWETH9', args: [minimumOut, recipient] })
  return { to: router, value: '0', data: encodeFunctionData({ abi: swapRouter02Abi, functionName: 'multicall', args: [[swap, unwrap]] }) }
}

const EthAmount = (description: string) => Type.Object({ wei: BaseUnits, eth: Type.String() }, { additionalProperties: false, description })

/**
 * `uniswap_swap_to_eth`: encodes a swap of a configured token to native ETH along its configured
 * path, floored at a live quote less the slippage.
 *
 * @example
 * registry.addGroup({ name: 'uniswap', order: 50, instructions, tools: [uniswapSwapToEth(app.bruno.chainArgument)] })
 */
export const uniswapSwapToEth = (chain: TSchema) =>
  defineTool({
    name: 'uniswap_swap_to_eth',
    title: 'Encode a Uniswap swap to ETH',
    description:
      'Encodes a swap of `amount` of a configured token to ETH for `recipient` on Uniswap V3, along the token\'s ' +
      'configured path, for the account to make (in calibur_batch, with the result\'s `approvals`: the router pulls ' +
      'the token); sends nothing. It reverts below minimumOut = QuoterV2\'s expectedOut × (10000 − slippageBps) / 10000.',
    input: Type.Object(
      {
        chain,
        token: TokenArgument,
        amount: TokenAmount,
        recipient: { ...AddressSchema, description: 'gets the ETH: the account' },
        slippageBps: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_SLIPPAGE_BPS, description: 'default: the network\'s' })),
      },
      { additionalProperties: false },
    ),
    output: Type.Object(
      {
        calls: Calls,
        approvals: Approvals,
        token: TokenInfo,
        amount: described(TokenAmount, 'whole token units'),
        amountBaseUnits: BaseUnits,
        recipient: AddressSchema,
        path: sameShapeAs(SwapPath, 'uniswap_price\'s path', 'the token\'s configured path to WETH'),
        expectedOut: EthAmount('QuoterV2\'s, now'),
        minimumOut: EthAmount('the floor'),
        slippageBps: Type.Integer(),
      },
      { additionalProperties: false },
    ),
    annotations: { readOnlyHint: true, openWorldHint: true },
    handler: async (args, { networks }) => {
      // The schema admits only configured network names.
      const network = networks.get(args.chain as string)
      const recipient = requireAddress(args.recipient, 'recipient')
      const route = swapRoute(network.config, args.token)
      const { token } = route
      const symbol = token.symbol ?? token.address
      const amountIn = toBaseUnits(args.amount, token.decimals, symbol)
      if (amountIn === 0n) throw new ToolError('amount is 0: a swap of nothing does nothing')
      const slippageBps = args.slippageBps ?? network.config.margins.defaultSlippageBps
      const path = describePath(network.config, route)
      const expectedOut = await quoteExactInput(network, route.encoded, amountIn, path.route)
      const minimumOut = minimumOutAfterSlippage(expectedOut, slippageBps)
      if (minimumOut === 0n) {
        throw new ToolError(`${args.amount} ${symbol} buys only ${expectedOut} wei: too little for a swap with a price floor`)
      }
      const router = getAddress(network.config.uniswap.swapRouter02)
      return {
        calls: [encodeSwapToEth({ router, path: route.encoded, amountIn, minimumOut, recipient })],
        approvals: [{ token: token.address, spender: router, amountBaseUnits: amountIn.toString() }],
        token,
        amount: formatUnits(amountIn, token.decimals),
        amountBaseUnits: amountIn.toString(),
        recipient,
        path,
        expectedOut: { wei: expectedOut.toString(), eth: formatEther(expectedOut) },
        minimumOut: { wei: minimumOut.toString(), eth: formatEther(minimumOut) },
        slippageBps,
      }
    },
  })

// QuoterV2 runs the swap and reverts with its result; simulating the call reads it without gas.
async function quoteExactInput(network: Network, path: Hex, amountIn: bigint, route: string): Promise<bigint> {
  try {
    const { result } = await network.client.simulateContract({
      address: getAddress(network.config.uniswap.quoterV2),
      abi: quoterV2Abi,
      functionName: 'quoteExactInput',
      args: [path, amountIn],
    })
    return result[0]
  } catch (error) {
    const reverted = error instanceof BaseError ? error.walk((cause) => cause instanceof ContractFunctionRevertedError) : null
    if (reverted instanceof ContractFunctionRevertedError) {
      throw new ToolError(`QuoterV2 could not quote ${route} on ${network.name}: ${reverted.reason ?? 'it reverted'} (is every pool of the configured path deployed, initialized and liquid?)`)
    }
    throw error
  }
}
