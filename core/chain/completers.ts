import type { Completer } from '../tool/prompt.ts'

/**
 * Completes a `chain` argument: the configured networks' names.
 *
 * @example
 * completeChain(services, {}) // ['base', 'local']
 */
export const completeChain: Completer = ({ networks }) => networks.names

/**
 * Completes a token to pay Bruno in: the configured symbols of the chosen chain that Bruno can
 * price (those with a swap path; WETH and other unpriced tokens would only be refused), or of
 * every chain, each once, when no configured chain is chosen yet.
 *
 * @example
 * completePaymentToken(services, { chain: 'base' }) // ['USDC']
 */
export const completePaymentToken: Completer = ({ networks }, chosen) => {
  const chains = chosen.chain !== undefined && networks.names.includes(chosen.chain) ? [chosen.chain] : networks.names
  const symbols = chains.flatMap((name) => networks.get(name).config.tokens.filter((token) => token.swapPath).map((token) => token.symbol))
  return [...new Set(symbols)]
}
