import { ChainUnavailableError } from './guardedTransport.ts'
import type { Network } from './networks.ts'

/**
 * Checks that the node behind a network is the configured chain. Relay operations ask it in the
 * same JSON-RPC batch as their other reads, so it costs no round trip; an endpoint that was
 * repointed (or a chain that restarted with another id) is refused before anything is priced.
 *
 * @example
 * await Promise.all([expectChainId(network), network.client.estimateGas(…)])
 */
export async function expectChainId(network: Network): Promise<void> {
  const answered = await network.client.getChainId()
  if (answered !== network.config.chainId) {
    throw new ChainUnavailableError(network.name, `it answered as chain ${answered}, not ${network.config.chainId}`)
  }
}
