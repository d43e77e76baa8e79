import { getAddress } from 'viem'
import { requireToken } from '../arguments.ts'
import type { Network } from '../chain/networks.ts'
import { ToolError } from '../tool.ts'
import type { PaymentToken } from './gasPricer.ts'

/**
 * A payment token the relay accepts on a network: configured, and priced along a swap path (or
 * WETH itself); else a `ToolError` naming the accepted ones.
 *
 * @example
 * paymentToken(network, 'USDC') // { address: '0x8335…2913', symbol: 'USDC', decimals: 6 }
 */
export function paymentToken(network: Network, token: string): PaymentToken {
  const { config } = network
  const found = requireToken(config, token)
  const weth = getAddress(config.weth)
  if (!found.configured || (!found.configured.swapPath && found.address !== weth)) {
    const accepted = config.tokens.filter((candidate) => candidate.swapPath || getAddress(candidate.address) === weth).map((candidate) => candidate.symbol)
    throw new ToolError(`${token} is not accepted as payment on ${config.name}: pay in one of ${accepted.join(', ')}`)
  }
  return { address: found.address, symbol: found.configured.symbol, decimals: found.configured.decimals }
}
