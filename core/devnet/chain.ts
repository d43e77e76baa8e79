import { defineChain, type Chain } from 'viem'

/** anvil's default chain id, and the devnet's unless it takes a preset's identity. */
export const DEVNET_CHAIN_ID = 31_337

/**
 * The devnet's chain as viem's clients take it: anvil's, numbered as the devnet was started.
 * Defined here rather than taken from `viem/chains`, whose index loads every chain viem knows —
 * 742 modules, a second of each process's start under tsx — for this one.
 *
 * @example
 * createWalletClient({ account, chain: devnetChain(deployment.chainId), transport: http(rpcUrl) })
 */
export function devnetChain(id: number = DEVNET_CHAIN_ID): Chain {
  return defineChain({
    id,
    name: 'Anvil',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: ['http://127.0.0.1:8545'] } },
  })
}
