import type { FastifyBaseLogger, FastifyPluginAsync } from 'fastify'
import { ChainUnavailableError } from '../chain/guardedTransport.ts'
import type { LaneView } from '../runner/runner.ts'
import { OPERATOR_READ_INTERVAL_MS, sharedRead } from './sharedRead.ts'

/** One chain's line in `GET /readyz`. */
export interface ChainReadiness {
  readonly chain: string
  readonly ready: boolean
  readonly blockNumber?: string
  /** Seconds since the latest block's timestamp. */
  readonly blockAgeSec?: number
  readonly reason?: string
  /** The runner's lanes on the chain, as its loop last saw them: informational, readiness does not depend on them. */
  readonly lanes?: readonly LaneView[]
}

/**
 * The operator endpoints, beside MCP:
 * - `GET /healthz`: 200 while the process is up and its store answers, else 503;
 * - `GET /readyz`: 200 when every chain's latest block is younger than its `maxBlockAgeSec`,
 *   else 503; the body lists each chain's block age and its runner lanes (owned here or not, in
 *   flight, next nonce, stuck, short of ETH);
 * - `GET /metrics`: Prometheus text format.
 * Bodies name chains by their configured names, never an RPC URL. None is rate-limited, so their
 * chain reads (the latest block here, the runner balances in `/metrics`) are shared: at most one
 * per chain per {@link OPERATOR_READ_INTERVAL_MS}, concurrent requests waiting on the same read.
 *
 * @example
 * await app.register(operatorRoutes)
 * // curl -s 127.0.0.1:3030/readyz → {"ready":true,"chains":[{"chain":"base","ready":true,"blockNumber":"…","blockAgeSec":1}]}
 */
export const operatorRoutes: FastifyPluginAsync = async (app) => {
  const { relay, networks, metrics } = app.bruno
  const latestBlocks = new Map(networks.names.map((name) => [name, sharedRead(() => networks.get(name).client.getBlock({ blockTag: 'latest' }))]))

  app.get('/healthz', async (_request, reply) => {
    const store = await relay.ping()
    return reply.code(store ? 200 : 503).send({ ok: store, store: store ? 'ok' : 'not answering' })
  })

  // Each chain's readiness as last answered: a probe logs only a change (one line when a chain
  // stops being ready, with its reason; one when it is ready again), not a line per probe.
  const lastReady = new Map<string, boolean>()
  const noteChange = (log: FastifyBaseLogger, chain: ChainReadiness) => {
    const before = lastReady.get(chain.chain)
    lastReady.set(chain.chain, chain.ready)
    if (before === chain.ready || (before === undefined && chain.ready)) return
    if (chain.ready) log.info({ chain: chain.chain }, 'readyz: chain ready again')
    else log.warn({ chain: chain.chain, reason: chain.reason }, 'readyz: chain not ready')
  }

  app.get('/readyz', async (request, reply) => {
    const lanesOf = new Map(relay.lanes().map(({ chain, lanes }) => [chain, lanes]))
    const chains = await Promise.all(
      networks.names.map(async (name): Promise<ChainReadiness> => {
        const { config } = networks.get(name)
        try {
          // Read at most once per interval; the age is counted to now, so a chain that stalls
          // shows it at once, and a shared block is never reported younger than it is.
          const block = await latestBlocks.get(name)!()
          const blockAgeSec = Math.max(0, Math.floor(Date.now() / 1000) - Number(block.timestamp))
          const fresh = config.maxBlockAgeSec === 0 || blockAgeSec <= config.maxBlockAgeSec
          return {
            chain: name,
            ready: fresh,
            blockNumber: block.number.toString(),
            blockAgeSec,
            ...(fresh ? {} : { reason: `the latest block is ${blockAgeSec}s old (maxBlockAgeSec ${config.maxBlockAgeSec})` }),
            ...(lanesOf.has(name) ? { lanes: lanesOf.get(name)! } : {}),
          }
        } catch (error) {
          // Only our own message is quoted: an RPC library's may carry the URL.
          return { chain: name, ready: false, reason: error instanceof ChainUnavailableError ? error.message : `chain "${name}" did not answer` }
        }
      }),
    )
    for (const chain of chains) noteChange(request.log, chain)
    const ready = chains.every((chain) => chain.ready)
    return reply.code(ready ? 200 : 503).send({ ready, chains })
  })

  app.get('/metrics', async (_request, reply) => {
    return reply.type(metrics.registry.contentType).send(await metrics.registry.metrics())
  })
}
