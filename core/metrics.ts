import { Counter, Gauge, Histogram, Registry } from 'prom-client'

/**
 * Bruno's Prometheus metrics, one registry per app (so several apps in one process, as in the
 * tests, keep their own counts). The hooks that feed it are one line each where the event happens:
 * the MCP route, the submission store, the chain transport; balances are read when scraped.
 *
 * @example
 * const metrics = new Metrics()
 * metrics.mcpRequests.inc({ method: 'tools/call', tool: 'quote' })
 * reply.type(metrics.registry.contentType).send(await metrics.registry.metrics())
 */
export class Metrics {
  readonly registry = new Registry()

  readonly mcpRequests = new Counter({
    name: 'bruno_mcp_requests_total',
    help: 'MCP requests, by JSON-RPC method and tool (tool empty unless tools/call; method "(error)" for a JSON-RPC error, "(notification)" for a notification)',
    labelNames: ['method', 'tool'] as const,
    registers: [this.registry],
  })

  readonly mcpErrors = new Counter({
    name: 'bruno_mcp_errors_total',
    help: 'MCP requests answered with an error, by JSON-RPC error code ("tool" for a tool result with isError)',
    labelNames: ['code'] as const,
    registers: [this.registry],
  })

  readonly submissions = new Counter({
    name: 'bruno_submissions_total',
    help: 'submissions entering each stage, by chain',
    labelNames: ['chain', 'stage'] as const,
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
    help: 'chain RPC requests that failed, by chain and JSON-RPC method (node errors such as reverts included)',
    labelNames: ['chain', 'method'] as const,
    registers: [this.registry],
  })

  /**
   * Counts one MCP request from its body and the payload answered: the method, the tool of a
   * `tools/call`, and the error code if the answer is a JSON-RPC error or a tool error. Only an
   * answered request lends its method and tool as labels: a refused or notification body's are
   * the caller's free text, and would grow the series without bound. Reads the payload's leading
   * bytes only, so a large `tools/list` is not parsed again.
   */
  countMcp(body: unknown, payload: string | undefined): void {
    const code = payload === undefined ? undefined : JSON_RPC_ERROR_CODE.exec(payload)?.[1]
    let method = payload === undefined ? '(notification)' : '(error)'
    let tool = ''
    if (payload !== undefined && code === undefined) {
      const message = body as { method: string; params?: { name?: unknown } }
      method = message.method
      if (method === 'tools/call' && typeof message.params?.name === 'string') tool = message.params.name
    }
    this.mcpRequests.inc({ method, tool })
    if (code) this.mcpErrors.inc({ code })
    // The tool's text is a JSON string inside the payload, so its own quotes are escaped: this
    // marker appears only as the result's own field.
    else if (tool && payload!.includes(',"isError":true')) this.mcpErrors.inc({ code: 'tool' })
  }

  /**
   * Registers the runner-balance gauge, read from the chains at each scrape: a balance is only
   * worth exporting as it is now, and the runner loop need not poll it.
   */
  runnerBalances(read: () => Promise<readonly { chain: string; wei: bigint }[]>): void {
    new Gauge({
      name: 'bruno_runner_balance_wei',
      help: 'the runner EOA\'s ETH balance, by chain (read at scrape time)',
      labelNames: ['chain'] as const,
      registers: [this.registry],
      async collect() {
        this.reset()
        for (const { chain, wei } of await read()) this.set({ chain }, Number(wei))
      },
    })
  }
}

// `{"jsonrpc":"2.0","id":…,"error":{"code":N` as errorPayload writes it; the id may be absent.
const JSON_RPC_ERROR_CODE = /^\{"jsonrpc":"2\.0",(?:"id":(?:"(?:[^"\\]|\\.)*"|-?\d+),)?"error":\{"code":(-?\d+)/
