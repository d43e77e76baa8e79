import { definePlugin } from '../../core/plugin.ts'
import { uniswapPrice } from './price.ts'
import { uniswapSwapToEth } from './swapToEth.ts'

const instructions = `uniswap tools read Uniswap V3 and send nothing. uniswap_swap_to_eth encodes a swap of a configured token (e.g. USDC) to native ETH along the token's configured pool path (SwapRouter02's multicall: exactInput, then unwrapWETH9 to \`recipient\`), with a price floor from a live quote less slippage: \`expectedOut\` is QuoterV2's quote now, \`minimumOut\` = expectedOut × (10000 − slippageBps) / 10000, rounded down, each as {wei, eth}; \`slippageBps\` defaults to the network's (at most 5000). Its \`calls\` must run FROM the user's account (in calibur_batch, or sent by the account's wallet), never from Bruno, and \`recipient\` is that account. The router pulls the token, so the account must allow it first: pass the result's \`approvals\` to calibur_batch, or put erc20_approve's calls (spender = the router, amount ≥ the swap's) before the swap's. No deadline is encoded: the floor protects the account, and the batch carrying the call has its own. uniswap_price reads the pools' current spot price (mid price: no fee, no price impact) along the same path, every pool at one block: \`ethPerToken\` and \`tokenPerEth\` as decimals with 18 significant digits, \`raw\` the same as integers (weiPerToken, baseUnitsPerEth), all rounded down; each pool's slot0 (sqrtPriceX96 prices token1 in token0, token0 the lower address) and liquidity. A path's \`route\` reads e.g. "USDC -(0.05%)-> WETH"; a pool's \`fee\` is in hundredths of a bip (500 = 0.05%).`

/**
 * The uniswap group: a token-to-ETH swap encoder and the spot price along configured paths.
 *
 * @example
 * await buildApp({ config, groups: [uniswapGroup], logger, serverInfo }) // serves it where config.groups names 'uniswap'
 */
export const uniswapGroup = definePlugin({
  name: 'uniswap',
  order: 50,
  setup: ({ chainArgument }) => ({ instructions, tools: [uniswapSwapToEth(chainArgument), uniswapPrice(chainArgument)] }),
})
