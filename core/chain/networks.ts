import { BaseError, createPublicClient, getAddress, http, isAddress, RpcRequestError, type Address, type Chain, type Hex, type PublicClient, type Transport } from 'viem'
import type { BrunoConfig, NetworkConfig, TokenConfig } from '../../config/schema.ts'
import type { FastifyBaseLogger } from 'fastify'
import type { Metrics } from '../metrics.ts'
import { ChainUnavailableError, guardedTransport } from './guardedTransport.ts'
import { observedTransport } from './observedTransport.ts'
import { PRICE_WINDOW_SEC } from './tokenPrice.ts'

/** One configured network: its config, a read client, and where its signed transactions go. */
export interface Network {
  readonly name: string
  readonly config: NetworkConfig
  /** Reads and simulations: always the network's `rpcUrl`. */
  readonly client: PublicClient
  /**
   * The runner loop's own client to `rpcUrl`: its JSON-RPC batches never carry a caller's requests,
   * so a slow simulation of a held submission does not hold a `quote` or `submit` back.
   */
  readonly runnerClient: PublicClient
  /**
   * A runner lane's own client to `rpcUrl` (one per `operator`, made on first asking): its JSON-RPC
   * batches carry that lane's simulations only. A node answers a batch when its slowest call is done,
   * so lanes sharing one would wait on each other's.
   *
   * @example
   * const simulated = await network.laneClient(lane.address).call({ account: lane.address, to, data })
   */
  laneClient(operator: Address): PublicClient
  /**
   * Hands a signed transaction to the chain (`eth_sendRawTransaction`): to `runner.broadcastUrl`
   * when the network has one (a revert-protected or private-builder endpoint), else to `rpcUrl`.
   * Resolves to the hash the endpoint answered; fails with a `BroadcastError`, which names the
   * chain and the endpoint's kind, never its URL.
   *
   * @example
   * const hash = await network.sendRawTransaction(await runner.signTransaction(request))
   */
  sendRawTransaction(raw: Hex): Promise<Hex>
  /**
   * Records the window a pool's time-weighted price was just taken over (`readWeiPerBaseUnit`):
   * `PRICE_WINDOW_SEC`, or less for a pool younger than it. Sets the `bruno_price_window_seconds`
   * gauge; the first short window of a pool is logged as a warning, and its return to the whole
   * window at info, so a shrunk window is never silent.
   *
   * @example
   * network.notePriceWindow(pool, 240) // warn: "pricing through a pool younger than the price window"
   */
  notePriceWindow(pool: Address, seconds: number): void
}

/**
 * A signed transaction the endpoint did not take: it answered a JSON-RPC error (`code` set, the
 * node's message in `reason`), or it could not be reached (`code` undefined, `cause` the
 * `ChainUnavailableError`). Nothing in it quotes the endpoint's URL: not the message, not a cause.
 */
export class BroadcastError extends Error {
  override readonly name = 'BroadcastError'
  constructor(
    readonly chain: string,
    /** Which endpoint was asked: the configured broadcast endpoint, or the read RPC. */
    readonly endpoint: 'broadcast endpoint' | 'RPC',
    /** The JSON-RPC error code the endpoint answered, e.g. -32000; undefined when it did not answer. */
    readonly code: number | undefined,
    /** The endpoint's own words ("nonce too low", "oversized data"), or why it did not answer. */
    readonly reason: string,
    options?: { cause: ChainUnavailableError },
  ) {
    super(`chain "${chain}": the ${endpoint} ${code === undefined ? 'did not take' : 'refused'} the transaction: ${reason}`, options)
  }
}

/** Where a network's reads are recorded: both optional (preflight and the CLI commands have neither). */
export interface NetworkObservers {
  readonly metrics?: Metrics
  readonly log?: FastifyBaseLogger
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

  /**
   * With `metrics`, every RPC request's duration and failures are recorded per chain and method, and
   * each pool's price window (`Network.notePriceWindow`); with `log`, a short price window is logged.
   */
  constructor(config: BrunoConfig, env: NodeJS.ProcessEnv = process.env, observers: NetworkObservers = {}) {
    this.#byName = new Map(config.networks.map((network) => [network.name, openNetwork(network, env, observers)]))
    this.names = config.networks.map((network) => network.name)
  }

  /** The network named `name`; throws for a name the config does not have (schemas prevent that). */
  get(name: string): Network {
    const network = this.#byName.get(name)
    if (!network) throw new Error(`unknown chain "${name}"`)
    return network
  }
}

function openNetwork(config: NetworkConfig, env: NodeJS.ProcessEnv, { metrics, log }: NetworkObservers): Network {
  const url = env[config.rpcUrl.env]
  if (!url) throw new Error(`networks.${config.name}.rpcUrl: environment variable ${config.rpcUrl.env} is not set`)
  const chain: Chain = {
    id: config.chainId,
    name: config.name,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [] } },
  }
  // Both endpoints get the same guard (a failure to reach one names the chain, never the URL)
  // and the same per-chain, per-method metrics.
  const wrap = (inner: Transport) => guardedTransport(config.name, metrics ? observedTransport(config.name, inner, metrics) : inner)
  // Each client batches its own requests (those made in one tick), apart from every other client's.
  const batchingClient = () => createPublicClient({ chain, transport: wrap(http(url, { timeout: config.rpcTimeoutMs, retryCount: 1, batch: { wait: 0 } })) })
  const client = batchingClient()
  const runnerClient = batchingClient()
  const laneClients = new Map<Address, PublicClient>()

  const broadcastUrl = openBroadcastUrl(config, env)
  // One request at a time: a private builder's endpoint need not take JSON-RPC batches.
  const sender = broadcastUrl ? createPublicClient({ chain, transport: wrap(http(broadcastUrl, { timeout: config.rpcTimeoutMs, retryCount: 1 })) }) : client
  const endpoint = broadcastUrl ? 'broadcast endpoint' : 'RPC'
  const sentTo = broadcastUrl ?? url
  const shortWindows = new Set<Address>()
  return {
    name: config.name,
    config,
    client,
    runnerClient,
    laneClient(operator) {
      const made = laneClients.get(operator) ?? batchingClient()
      laneClients.set(operator, made)
      return made
    },
    async sendRawTransaction(raw) {
      try {
        return await sender.sendRawTransaction({ serializedTransaction: raw })
      } catch (error) {
        throw broadcastError(config.name, endpoint, sentTo, error)
      }
    },
    notePriceWindow(pool, seconds) {
      metrics?.priceWindow.set({ chain: config.name, pool }, seconds)
      const short = seconds < PRICE_WINDOW_SEC
      if (short === shortWindows.has(pool)) return
      if (short) {
        shortWindows.add(pool)
        log?.warn({ chain: config.name, pool, windowSec: seconds, wantedSec: PRICE_WINDOW_SEC }, 'pricing through a pool younger than the price window: its time-weighted price is taken over its whole history, shorter than the window')
      } else {
        shortWindows.delete(pool)
        log?.info({ chain: config.name, pool, windowSec: seconds }, 'the pool\'s price history now covers the whole price window')
      }
    },
  }
}

/** The broadcast endpoint's URL, if the network has one; refused unless it is an http(s) URL (the message never quotes it). */
function openBroadcastUrl(config: NetworkConfig, env: NodeJS.ProcessEnv): string | undefined {
  const reference = config.runner.broadcastUrl
  if (!reference) return undefined
  const at = `networks.${config.name}.runner.broadcastUrl`
  const url = env[reference.env]
  if (!url) throw new Error(`${at}: environment variable ${reference.env} is not set`)
  let protocol: string | undefined
  try {
    protocol = new URL(url).protocol
  } catch {
    protocol = undefined
  }
  if (protocol !== 'http:' && protocol !== 'https:') throw new Error(`${at}: environment variable ${reference.env} does not hold an http(s) URL`)
  return url
}

/**
 * The failure of a send, retold without the endpoint's URL. viem's errors quote it (an
 * `RpcRequestError` names it and is every JSON-RPC error's cause), so none of them is kept:
 * only the code and the node's own message, with the URL struck out should a node echo it.
 */
function broadcastError(chain: string, endpoint: BroadcastError['endpoint'], url: string, error: unknown): BroadcastError {
  const unavailable = findError(error, (cause): cause is ChainUnavailableError => cause instanceof ChainUnavailableError)
  if (unavailable) return new BroadcastError(chain, endpoint, undefined, unavailable.message.replace(/^chain ".*?" is unavailable: /, ''), { cause: unavailable })
  const answered = findError(error, (cause): cause is RpcRequestError => cause instanceof RpcRequestError)
  if (answered) return new BroadcastError(chain, endpoint, answered.code, answered.details.replaceAll(url, '[redacted]'))
  const name = error instanceof Error ? error.name : typeof error
  return new BroadcastError(chain, endpoint, undefined, `it failed (${name})`)
}

function findError<T extends Error>(error: unknown, match: (cause: unknown) => cause is T): T | undefined {
  if (error instanceof BaseError) return (error.walk((cause) => match(cause)) as T | null) ?? undefined
  for (let cause: unknown = error; cause instanceof Error; cause = cause.cause) if (match(cause)) return cause
  return undefined
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
