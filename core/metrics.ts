import { Counter, Gauge, Histogram, Registry } from 'prom-client'
import type { McpCount } from './mcp/dispatcher.ts'
import { OPERATOR_READ_INTERVAL_MS } from './operators/sharedRead.ts'

/**
 * Bruno's Prometheus metrics, one registry per app (so several apps in one process, as in the
 * tests, keep their own counts). The hooks that feed it are one line each where the event happens:
 * the MCP route, the submission store, the chain transport; balances are read when scraped.
 *
 * @example
 * const metrics = new Metrics()
 * metrics.countMcp({ method: 'tools/call', tool: 'quote' })
 * reply.type(metrics.registry.contentType).send(await metrics.registry.metrics())
 */
export class Metrics {
  readonly registry = new Registry()

  // MCP requests are counted in plain maps on the request path and handed to prom-client when
  // scraped: its labelled inc() costs more than the rest of counting an MCP request together.
  readonly #mcpRequestCounts = new Map<string, { method: string; tool: string; count: number }>()
  readonly #mcpErrorCounts = new Map<string, number>()

  readonly mcpRequests = new Counter({
    name: 'bruno_mcp_requests_total',
    help: 'MCP requests, by JSON-RPC method and tool (tool empty unless tools/call; method "(error)" for a JSON-RPC error, "(notification)" for a notification)',
    labelNames: ['method', 'tool'] as const,
    registers: [this.registry],
    collect: () => {
      this.mcpRequests.reset()
      for (const { method, tool, count } of this.#mcpRequestCounts.values()) this.mcpRequests.inc({ method, tool }, count)
    },
  })

  readonly mcpErrors = new Counter({
    name: 'bruno_mcp_errors_total',
    help: 'MCP requests answered with an error, by JSON-RPC error code ("tool" for a tool result with isError)',
    labelNames: ['code'] as const,
    registers: [this.registry],
    collect: () => {
      this.mcpErrors.reset()
      for (const [code, count] of this.#mcpErrorCounts) this.mcpErrors.inc({ code }, count)
    },
  })

  readonly submissions = new Counter({
    name: 'bruno_submissions_total',
    help: 'submissions entering each stage, by chain',
    labelNames: ['chain', 'stage'] as const,
    registers: [this.registry],
  })

  readonly callsFailed = new Counter({
    name: 'bruno_calls_failed_total',
    help: 'submissions done whose call failed on chain (the payment taken, the call undone), by chain',
    labelNames: ['chain'] as const,
    registers: [this.registry],
  })

  readonly admissionRefusals = new Counter({
    name: 'bruno_admission_refusals_total',
    help: 'submissions refused by admission before they were simulated, by chain and reason (account or client banned or busy)',
    labelNames: ['chain', 'reason'] as const,
    registers: [this.registry],
  })

  readonly laneTopUps = new Counter({
    name: 'bruno_runner_lane_topups_total',
    help: 'ETH transfers runner.treasury sent to a lane under its floor, by chain and lane',
    labelNames: ['chain', 'operator'] as const,
    registers: [this.registry],
  })

  readonly timeToDone = new Histogram({
    name: 'bruno_submission_done_seconds',
    help: 'from a submission being accepted to it being done, by chain',
    labelNames: ['chain'] as const,
    buckets: [1, 2, 5, 10, 20, 30, 60, 120, 300, 600],
    registers: [this.registry],
  })

  readonly rpcDuration = new Histogram({
    name: 'bruno_rpc_duration_seconds',
    help: 'chain RPC requests, by chain and JSON-RPC method',
    labelNames: ['chain', 'method'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  })

  readonly rpcErrors = new Counter({
    name: 'bruno_rpc_errors_total',
    help: 'chain RPC requests that failed, by chain and JSON-RPC method: the node or the way to it (a revert is counted apart)',
    labelNames: ['chain', 'method'] as const,
    registers: [this.registry],
  })

  readonly rpcReverts = new Counter({
    name: 'bruno_rpc_reverts_total',
    help: 'calls and estimates the node answered with a revert, by chain and JSON-RPC method: a simulation\'s answer (a probe, a refused call), not a failure',
    labelNames: ['chain', 'method'] as const,
    registers: [this.registry],
  })

  readonly priceWindow = new Gauge({
    name: 'bruno_price_window_seconds',
    help: 'the window the last time-weighted price read through each pool was taken over, by chain and pool (600; less only for a pool younger than that)',
    labelNames: ['chain', 'pool'] as const,
    registers: [this.registry],
  })

  /**
   * Counts one MCP request as the dispatcher saw it: its method, the tool of a `tools/call`, and
   * the error code if the answer is a JSON-RPC error or a tool error.
   */
  countMcp({ method, tool, error }: McpCount): void {
    const key = `${method}\n${tool}`
    const counted = this.#mcpRequestCounts.get(key)
    if (counted) counted.count++
    else this.#mcpRequestCounts.set(key, { method, tool, count: 1 })
    if (error) this.#mcpErrorCounts.set(error, (this.#mcpErrorCounts.get(error) ?? 0) + 1)
  }

  /**
   * Registers the runner-balance gauge, read from the chains at each scrape: a balance is only
   * worth exporting as it is now, and the runner loop need not poll it. `read` is expected to be
   * shared (`sharedRead`): `/metrics` is not rate-limited.
   */
  runnerBalances(read: () => Promise<readonly { chain: string; operator: string; wei: bigint }[]>): void {
    new Gauge({
      name: 'bruno_runner_balance_wei',
      help: `each runner EOA's ETH balance, by chain and lane (read at scrape time, at most once per ${OPERATOR_READ_INTERVAL_MS / 1000} s)`,
      labelNames: ['chain', 'operator'] as const,
      registers: [this.registry],
      async collect() {
        this.reset()
        for (const { chain, operator, wei } of await read()) this.set({ chain, operator }, Number(wei))
      },
    })
  }

  /**
   * Registers the runner lanes' gauges, read from the runner loops' memory at each scrape: each lane's
   * transactions in flight, its next nonce (once read), and whether it is stuck or short of ETH (1 or
   * 0), by chain and operator.
   */
  runnerLanes(read: () => readonly { chain: string; lanes: readonly { operator: string; owned: boolean; inFlight: number; nextNonce?: number; stuck: boolean; short: boolean }[] }[]): void {
    const gauge = (name: string, help: string, value: (lane: { inFlight: number; nextNonce?: number; stuck: boolean; short: boolean }) => number | undefined) =>
      new Gauge({
        name,
        help,
        labelNames: ['chain', 'operator'] as const,
        registers: [this.registry],
        collect() {
          this.reset()
          for (const { chain, lanes } of read()) {
            for (const lane of lanes) {
              const measured = lane.owned ? value(lane) : undefined
              if (measured !== undefined) this.set({ chain, operator: lane.operator }, measured)
            }
          }
        },
      })
    gauge('bruno_runner_lane_in_flight', 'transactions each lane this process owns has sent and not yet seen included, by chain and lane', (lane) => lane.inFlight)
    gauge('bruno_runner_lane_next_nonce', 'the nonce each lane this process owns sends its next transaction at, by chain and lane (absent until read)', (lane) => lane.nextNonce)
    gauge('bruno_runner_lane_stuck', '1 while a lane has a transaction unincluded past runner.stuckAfterMs (it takes no new work while another lane can), by chain and lane', (lane) => (lane.stuck ? 1 : 0))
    gauge('bruno_runner_lane_short', '1 while a lane cannot pay for gas (it takes no new work until funded), by chain and lane', (lane) => (lane.short ? 1 : 0))
  }
}
