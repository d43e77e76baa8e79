import { definePlugin } from '../../core/plugin.ts'
import { uniswapPrice } from './price.ts'
import { uniswapSwapToEth } from './swapToEth.ts'

const instructions = `uniswap tools read Uniswap V3 and send nothing. uniswap_swap_to_eth encodes a swap of a configured token (e.g. USDC) to native ETH along the token's configured pool path, with a price floor from a live quote less slippage; its \`calls\` must run FROM the user's account (in calibur_batch, or sent by the account's wallet), never from Bruno, and \`recipient\` is that account. The router pulls the token, so the account must allow it first: pass the result's \`approvals\` to calibur_batch, or put erc20_approve's calls before the swap's. uniswap_price reads the pools' current spot price (mid price: no fee, no price impact).`

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
