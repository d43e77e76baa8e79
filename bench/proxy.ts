import { createServer, request as httpRequest, Agent, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

/** One HTTP request the proxy forwarded: a JSON-RPC call or a batch, one round trip either way. */
export interface RoundTrip {
  readonly at: number
  readonly methods: readonly string[]
}

/**
 * A loopback HTTP proxy in front of a JSON-RPC node that counts round trips (HTTP requests; a
 * JSON-RPC batch is one) and remembers the methods in each.
 *
 * @example
 * const proxy = await countingProxy(anvil.rpcUrl)
 * const mark = proxy.count
 * await client.getBlockNumber()
 * proxy.since(mark) // [{ at, methods: ['eth_blockNumber'] }]
 */
export interface CountingProxy {
  readonly url: string
  /** Round trips forwarded so far. */
  readonly count: number
  since(mark: number): RoundTrip[]
  close(): Promise<void>
}

export async function countingProxy(target: string): Promise<CountingProxy> {
  const upstream = new URL(target)
  if (upstream.hostname !== '127.0.0.1' && upstream.hostname !== 'localhost') throw new Error('the counting proxy forwards to loopback only')
  const agent = new Agent({ keepAlive: true, maxSockets: 64 })
  const trips: RoundTrip[] = []
  const server: Server = createServer((incoming, outgoing) => {
    const chunks: Buffer[] = []
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk))
    incoming.on('end', () => {
      const body = Buffer.concat(chunks)
      let methods: string[] = []
      try {
        const parsed = JSON.parse(body.toString('utf8')) as { method?: string } | { method?: string }[]
        methods = (Array.isArray(parsed) ? parsed : [parsed]).map((call) => call.method ?? '?')
      } catch {
        methods = ['(unparsed)']
      }
      trips.push({ at: performance.now(), methods })
      const forward = httpRequest(
        { host: upstream.hostname, port: upstream.port, path: upstream.pathname, method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': body.length } },
        (answer) => {
          outgoing.writeHead(answer.statusCode ?? 502, { 'content-type': answer.headers['content-type'] ?? 'application/json' })
          answer.pipe(outgoing)
        },
      )
      forward.on('error', () => {
        outgoing.writeHead(502)
        outgoing.end()
      })
      forward.end(body)
    })
  })
  server.keepAliveTimeout = 30_000
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    get count() {
      return trips.length
    },
    since: (mark) => trips.slice(mark),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
        agent.destroy()
      }),
  }
}
