import { getAddress } from 'viem'
import type { NetworkConfig, ResourceDefinition, ServedDelegate } from '../../../core/plugin.ts'

/**
 * `bruno://<chain>/config`: what a client needs to know of a network's deployment — tokens, payee,
 * the Runner and the delegates served (`relay.delegates`, read when first asked: every group is set
 * up by then), margins, relay windows. Built field by field from the config, so nothing secret (the
 * RPC URL's variable, the runner key's variable) can slip in with a new field.
 *
 * @example
 * networkConfigResource(config.networks[0]).uri // 'bruno://base/config'
 */
export function networkConfigResource(network: NetworkConfig): ResourceDefinition {
  let text: string | undefined
  return {
    uri: `bruno://${network.name}/config`,
    name: `${network.name}-config`,
    title: `Bruno on ${network.name}`,
    description: `The ${network.name} deployment: tokens Bruno is paid in, payee, the Runner and the delegates accounts use (name and address), margins, quote and submission windows.`,
    mimeType: 'application/json',
    // Changes only with a deployment (the config is read at start).
    cache: { ttlMs: 3_600_000, scope: 'public' },
    read: async ({ relay }) => (text ??= JSON.stringify(publicConfig(network, relay.delegates(network.name)), null, 2)),
  }
}

function publicConfig(network: NetworkConfig, delegates: readonly ServedDelegate[]) {
  return {
    chain: network.name,
    chainId: network.chainId,
    payee: getAddress(network.payee),
    delegates: delegates.map(({ name, address }) => ({ name, address: getAddress(address) })),
    runner: { contract: getAddress(network.runner.contract), confirmations: network.runner.confirmations },
    weth: getAddress(network.weth),
    tokens: network.tokens.map((token) => ({
      symbol: token.symbol,
      address: getAddress(token.address),
      decimals: token.decimals,
      // A token with a swap path is one Bruno can price, so one it can be paid in.
      payable: token.swapPath !== undefined,
      ...(token.swapPath ? { swapPath: token.swapPath.map((hop) => ({ fee: hop.fee, tokenOut: getAddress(hop.tokenOut) })) } : {}),
    })),
    uniswap: {
      factory: getAddress(network.uniswap.factory),
      swapRouter02: getAddress(network.uniswap.swapRouter02),
      quoterV2: getAddress(network.uniswap.quoterV2),
    },
    margins: { quoteBps: network.margins.quoteBps, defaultSlippageBps: network.margins.defaultSlippageBps, markupBps: network.margins.markupBps },
    relay: {
      quoteTtlSec: network.relay.quoteTtlSec,
      submissionTtlSec: network.relay.submissionTtlSec,
      maxTransactionBytes: network.relay.maxTransactionBytes,
      maxRevertGas: network.relay.maxRevertGas,
      paymentMarginSec: network.relay.paymentMarginSec,
      inclusionSec: network.relay.inclusionSec,
      failingHoldSec: network.relay.failingHoldSec,
      retentionSec: network.relay.retentionSec,
      maxCallGas: network.relay.maxCallGas,
      admission: network.relay.admission,
    },
  }
}
