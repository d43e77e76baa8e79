import { getAddress } from 'viem'
import type { NetworkConfig } from '../../config/schema.ts'
import type { KnownChain } from './describe.ts'

/** What a view and the signing page are served with: the chains' known contracts, where the signing page is. */
export interface PageContext {
  readonly chains: readonly KnownChain[]
  /** The signing page's absolute address, as the request that read the view reached Bruno. */
  readonly signPage: string
  /** Bruno's MCP endpoint for the signing page's own calls (same origin as the page). */
  readonly mcpPath: string
}

/**
 * A network's contracts and tokens as a view names them, from the deployment's config (what
 * `bruno://<chain>/config` publishes), with the delegates served there.
 *
 * @example
 * knownChain(config.networks[0], [{ name: 'Calibur', address: CALIBUR }]).swapRouter02 // '0x68b3…Fc45'
 */
export function knownChain(network: NetworkConfig, delegates: readonly { name: string; address: string }[]): KnownChain {
  return {
    chain: network.name,
    chainId: network.chainId,
    payee: getAddress(network.payee),
    runner: getAddress(network.runner.contract),
    weth: getAddress(network.weth),
    swapRouter02: getAddress(network.uniswap.swapRouter02),
    markupBps: network.margins.markupBps,
    tokens: network.tokens.map((token) => ({ symbol: token.symbol, address: getAddress(token.address), decimals: token.decimals })),
    delegates: delegates.map(({ name, address }) => ({ name, address: getAddress(address) })),
  }
}
