import { Type, type TSchema } from '@sinclair/typebox'
import { BaseError, ContractFunctionRevertedError, encodeFunctionData, formatEther, formatUnits, getAddress, type Address, type Hex } from 'viem'
import { Address as AddressSchema, Approvals, BaseUnits, Call, Calls, defineTool, requireAddress, toBaseUnits, TokenAmount, TokenArgument, TokenInfo, ToolError, type Network } from '../../core/plugin.ts'
import { quoterV2Abi, swapRouter02Abi } from './abi.ts'
import { describePath, swapRoute, SwapPath } from './path.ts'

/**
 * SwapRouter02's `Constants.ADDRESS_THIS`: as a swap's recipient, the router keeps the output
 * itself, so the `unwrapWETH9` that follows in the same multicall can turn it into ETH.
 */
const ROUTER_ITSELF = '0x0000000000000000000000000000000000000002'

const MAX_SLIPPAGE_BPS = 5_000

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

const EthAmount = (description: string) =>
  Type.Object(
    {
      wei: BaseUnits,
      eth: Type.String({ description: 'the same amount in ETH units' }),
    },
    { additionalProperties: false, description },
  )

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
    title: 'Encode a Uniswap swap of a token to ETH',
    description:
      'Encodes a swap of `amountIn` of a configured token (e.g. "USDC") to native ETH on Uniswap V3 (SwapRouter02), ' +
      'along the token\'s configured pool path; sends nothing. Returns one call (the router\'s multicall: exactInput, ' +
      'then unwrapWETH9 to `recipient`) that must run FROM the user\'s account — inside calibur_batch, or sent by the ' +
      'account\'s wallet — never from Bruno: the account pays the token and `recipient` (normally that same account) ' +
      'receives the ETH. The router takes the token with transferFrom, so the account must first allow it: pass ' +
      '`approvals` to calibur_batch, or put erc20_approve\'s calls (spender = the router, amount ≥ amountIn) before these. ' +
      '`expectedOut` is QuoterV2\'s quote now; `minimumOut` = expectedOut × (10000 − slippageBps) / 10000, rounded down: ' +
      'the whole swap reverts if the account would get less. `slippageBps` defaults to the network\'s configured ' +
      'default (at most 5000). No deadline is encoded: the price floor protects the account, and the batch carrying the ' +
      'call has its own.',
    input: Type.Object(
      {
        chain,
        token: TokenArgument,
        amountIn: { ...TokenAmount, description: 'the token amount to sell, in whole units ("25.5"), more than 0' },
        recipient: { ...AddressSchema, description: 'who receives the ETH: the account that makes the call' },
        slippageBps: Type.Optional(
          Type.Integer({ minimum: 0, maximum: MAX_SLIPPAGE_BPS, description: 'allowed shortfall from the quote, in basis points (50 = 0.5%)' }),
        ),
      },
      { additionalProperties: false },
    ),
    output: Type.Object(
      {
        calls: Calls,
        approvals: Approvals,
        token: TokenInfo,
        amountIn: Type.String({ description: 'the token amount sold, in whole units' }),
        amountInBaseUnits: BaseUnits,
        recipient: AddressSchema,
        path: SwapPath,
        expectedOut: EthAmount('the ETH the quoter expects the swap to pay now'),
        minimumOut: EthAmount('the least ETH the swap may pay: below it, it reverts'),
        slippageBps: Type.Integer({ description: 'the slippage applied, in basis points' }),
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
      const amountIn = toBaseUnits(args.amountIn, token.decimals, symbol)
      if (amountIn === 0n) throw new ToolError('amountIn is 0: a swap of nothing does nothing')
      const slippageBps = args.slippageBps ?? network.config.margins.defaultSlippageBps
      const path = describePath(network.config, route)
      const expectedOut = await quoteExactInput(network, route.encoded, amountIn, path.route)
      const minimumOut = minimumOutAfterSlippage(expectedOut, slippageBps)
      if (minimumOut === 0n) {
        throw new ToolError(`${args.amountIn} ${symbol} buys only ${expectedOut} wei: too little for a swap with a price floor`)
      }
      const router = getAddress(network.config.uniswap.swapRouter02)
      return {
        calls: [encodeSwapToEth({ router, path: route.encoded, amountIn, minimumOut, recipient })],
        approvals: [{ token: token.address, spender: router, amount: amountIn.toString() }],
        token,
        amountIn: formatUnits(amountIn, token.decimals),
        amountInBaseUnits: amountIn.toString(),
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
