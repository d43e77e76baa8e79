import { createPublicClient, getAddress, http, isAddress, type Address, type Chain, type PublicClient } from 'viem'
import type { BrunoConfig, NetworkConfig, TokenConfig } from '../../config/schema.ts'
import type { Metrics } from '../metrics.ts'
import { guardedTransport } from './guardedTransport.ts'
import { observedTransport } from './observedTransport.ts'

/** One configured network: its config and a read client. */
export interface Network {
  readonly name: string
  readonly config: NetworkConfig
  readonly client: PublicClient
}

/** How a token was named by a caller, resolved against the network's configured tokens. */
export type TokenRef = { readonly address: Address; readonly configured?: TokenConfig }

/**
 * The configured networks by name. RPC URLs are read from the environment once, here, and
 * kept inside the viem transports: nothing else in the process sees them.
 */
export class Networks {
  readonly names: readonly string[]
  readonly #byName: ReadonlyMap<string, Network>

  /** With `metrics`, every RPC request's duration and failures are recorded per chain and method. */
  constructor(config: BrunoConfig, env: NodeJS.ProcessEnv = process.env, metrics?: Metrics) {
    this.#byName = new Map(config.networks.map((network) => [network.name, openNetwork(network, env, metrics)]))
    this.names = config.networks.map((network) => network.name)
  }

  /** The network named `name`; throws for a name the config does not have (schemas prevent that). */
  get(name: string): Network {
    const network = this.#byName.get(name)
    if (!network) throw new Error(`unknown chain "${name}"`)
    return network
  }
}

function openNetwork(config: NetworkConfig, env: NodeJS.ProcessEnv, metrics: Metrics | undefined): Network {
  const url = env[config.rpcUrl.env]
  if (!url) throw new Error(`networks.${config.name}.rpcUrl: environment variable ${config.rpcUrl.env} is not set`)
  const chain: Chain = {
    id: config.chainId,
    name: config.name,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [] } },
  }
  const rpc = http(url, { timeout: config.rpcTimeoutMs, retryCount: 1, batch: { wait: 0 } })
  const client = createPublicClient({
    chain,
    transport: guardedTransport(config.name, metrics ? observedTransport(config.name, rpc, metrics) : rpc),
  })
  return { name: config.name, config, client }
}

/**
 * Resolves a token given as a configured symbol (any case) or an address.
 *
 * @example
 * resolveToken(network.config, 'usdc') // { address: '0x…', configured: { symbol: 'USDC', decimals: 6, … } }
 */
export function resolveToken(network: NetworkConfig, token: string): TokenRef | undefined {
  const index = tokenIndexOf(network)
  const bySymbol = index.bySymbol.get(token.toLowerCase())
  if (bySymbol) return bySymbol
  if (!isAddress(token, { strict: false })) return undefined
  const address = getAddress(token)
  return index.byAddress.get(address) ?? { address }
}

interface TokenIndex {
  readonly bySymbol: ReadonlyMap<string, TokenRef>
  readonly byAddress: ReadonlyMap<Address, TokenRef>
}

// A network's configured tokens, checksummed and keyed once: every tool call resolves a token.
const tokenIndexes = new WeakMap<NetworkConfig, TokenIndex>()

function tokenIndexOf(network: NetworkConfig): TokenIndex {
  let index = tokenIndexes.get(network)
  if (!index) {
    const bySymbol = new Map<string, TokenRef>()
    const byAddress = new Map<Address, TokenRef>()
    // The first of two entries with one symbol or address wins, as the config lists them.
    for (const configured of network.tokens) {
      const ref: TokenRef = { address: getAddress(configured.address), configured }
      if (!bySymbol.has(configured.symbol.toLowerCase())) bySymbol.set(configured.symbol.toLowerCase(), ref)
      if (!byAddress.has(ref.address)) byAddress.set(ref.address, ref)
    }
    index = { bySymbol, byAddress }
    tokenIndexes.set(network, index)
  }
  return index
}
