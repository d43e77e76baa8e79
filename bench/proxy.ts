import { createServer, request as httpRequest, Agent, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

/** One HTTP request the proxy forwarded: a JSON-RPC call or a batch, one round trip either way. */
export interface RoundTrip {
  /** When it arrived: unix ms, fractional (`performance.timeOrigin + performance.now()`), comparable across processes. */
  readonly at: number
  readonly methods: readonly string[]
  /** The tagged key (see `CountingProxy.tag`) of each JSON-RPC call in the request that carries one, if any. */
  readonly keys?: readonly string[]
}

/**
 * What the proxy does to a tagged key once the relay has accepted its submission (see `watch`):
 * `close` writes 1 into the gate contract's storage slot named by the key (its call then fails);
 * `poison` answers every later simulation carrying the key (`eth_call`, `eth_estimateGas`) itself,
 * with `answer` (a JSON-RPC error, or a malformed result), as a node that cannot simulate it would.
 */
export type WatchAction =
  | { readonly kind: 'close'; readonly gate: string }
  | { readonly kind: 'poison'; readonly answer: { readonly error: { readonly code: number; readonly message: string } } | { readonly result: unknown } }

/**
 * A loopback HTTP proxy in front of a JSON-RPC node that counts round trips (HTTP requests; a
 * JSON-RPC batch is one) and remembers the methods in each.
 *
 * For the soak (bench/soak.ts) it also marks and changes chosen calls: `tag` names a hex prefix of
 * 32-byte keys that calls carry in their data; a round trip whose body holds such keys lists them.
 * `watch(key, action)` applies `action` right after the node answered the first `eth_call` carrying
 * `key` with fee fields, before that answer is passed back: submit's last check of a call is that
 * exact simulation (quote never makes one), so the call changes before the relay has accepted it
 * and before its runner can look at it. Nothing else is changed: with no key tagged the proxy only
 * forwards.
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
  /** Keys are 32-byte words (64 hex digits, no 0x) starting with `prefix`. */
  tag(prefix: string): void
  watch(key: string, action: WatchAction): void
  close(): Promise<void>
}

interface RpcElement {
  readonly id?: unknown
  readonly method?: string
  readonly params?: unknown
}

const SIMULATIONS = new Set(['eth_call', 'eth_estimateGas'])

/** The call data of a simulation request element, lowercase, if it is one. */
function simulationData(element: RpcElement): string | undefined {
  if (!element.method || !SIMULATIONS.has(element.method) || !Array.isArray(element.params)) return undefined
  const transaction = element.params[0] as { data?: unknown; input?: unknown } | undefined
  const data = transaction?.data ?? transaction?.input
  return typeof data === 'string' ? data.toLowerCase() : undefined
}

function hasFees(element: RpcElement): boolean {
  const transaction = Array.isArray(element.params) ? (element.params[0] as { maxFeePerGas?: unknown } | undefined) : undefined
  return transaction?.maxFeePerGas !== undefined
}

export async function countingProxy(target: string): Promise<CountingProxy> {
  const upstream = new URL(target)
  if (upstream.hostname !== '127.0.0.1' && upstream.hostname !== 'localhost') throw new Error('the counting proxy forwards to loopback only')
  const agent = new Agent({ keepAlive: true, maxSockets: 64 })
  const trips: RoundTrip[] = []
  let prefix: string | undefined
  const watched = new Map<string, WatchAction & { kind: 'close' }>()
  const watchedPoison = new Map<string, WatchAction & { kind: 'poison' }>()
  const poisoned = new Map<string, WatchAction & { kind: 'poison' }>()

  /** The node's answer to `body`, whole. */
  const forward = (body: Buffer) =>
    new Promise<{ status: number; type: string; body: Buffer }>((resolve, reject) => {
      const sent = httpRequest(
        { host: upstream.hostname, port: upstream.port, path: upstream.pathname, method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': body.length } },
        (answer: IncomingMessage) => {
          const chunks: Buffer[] = []
          answer.on('data', (chunk: Buffer) => chunks.push(chunk))
          answer.on('end', () => resolve({ status: answer.statusCode ?? 502, type: String(answer.headers['content-type'] ?? 'application/json'), body: Buffer.concat(chunks) }))
          answer.on('error', reject)
        },
      )
      sent.on('error', reject)
      sent.end(body)
    })

  /** Closes a gate: its storage slot `key` set to 1 (anvil_setStorageAt), so that its call reverts from now on. */
  const closeGate = async (gate: string, key: string) => {
    const body = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'anvil_setStorageAt', params: [gate, `0x${key}`, `0x${'0'.repeat(63)}1`] }))
    const answer = JSON.parse((await forward(body)).body.toString('utf8')) as { result?: unknown; error?: { message: string } }
    if (answer.error) throw new Error(`anvil_setStorageAt: ${answer.error.message}`)
  }

  /** The tagged keys in `text` (each occurrence of the prefix starts one), each once. */
  const keysIn = (text: string): string[] => {
    if (!prefix) return []
    const keys = new Set<string>()
    for (let at = text.indexOf(prefix); at >= 0; at = text.indexOf(prefix, at + 64)) keys.add(text.slice(at, at + 64))
    return [...keys]
  }
  /** The tagged key each call of a request carries (a call carrying none adds nothing). */
  const keysPerCall = (parsed: RpcElement | RpcElement[]): string[] =>
    (Array.isArray(parsed) ? parsed : [parsed]).flatMap((element) => keysIn(JSON.stringify(element.params ?? null).toLowerCase()).slice(0, 1))

  /**
   * A request carrying tagged keys: element by element, those carrying a poisoned key answered here,
   * the others forwarded (as one batch); a watched key's action applied once the node answered its
   * first simulation with fees.
   */
  const handleTagged = async (parsed: RpcElement | RpcElement[], keys: string[]): Promise<Buffer> => {
    const batch = Array.isArray(parsed)
    const elements = batch ? parsed : [parsed]
    const answers = new Map<number, unknown>()
    const onward: number[] = []
    const triggered: string[] = []
    elements.forEach((element, index) => {
      const data = simulationData(element)
      const poison = data === undefined ? undefined : keys.find((key) => poisoned.has(key) && data.includes(key))
      if (poison) {
        answers.set(index, { jsonrpc: '2.0', id: element.id ?? null, ...poisoned.get(poison)!.answer })
        return
      }
      onward.push(index)
      if (data !== undefined && element.method === 'eth_call' && hasFees(element)) {
        for (const key of keys) if ((watched.has(key) || watchedPoison.has(key)) && data.includes(key)) triggered.push(key)
      }
    })
    if (onward.length > 0) {
      const forwarded = batch ? onward.map((index) => elements[index]) : elements[0]
      const reply = JSON.parse((await forward(Buffer.from(JSON.stringify(forwarded)))).body.toString('utf8')) as unknown
      if (!batch) answers.set(0, reply)
      else {
        const byId = new Map((reply as { id: unknown }[]).map((answer) => [JSON.stringify(answer.id), answer]))
        for (const index of onward) answers.set(index, byId.get(JSON.stringify(elements[index]!.id)))
      }
    }
    for (const key of triggered) {
      const close = watched.get(key)
      if (close) {
        watched.delete(key)
        await closeGate(close.gate, key)
      }
      const poison = watchedPoison.get(key)
      if (poison) {
        watchedPoison.delete(key)
        poisoned.set(key, poison)
      }
    }
    return Buffer.from(JSON.stringify(batch ? elements.map((_, index) => answers.get(index)) : answers.get(0)))
  }

  const server: Server = createServer((incoming, outgoing) => {
    const chunks: Buffer[] = []
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk))
    incoming.on('end', () => {
      const body = Buffer.concat(chunks)
      const text = body.toString('utf8')
      let methods: string[] = []
      let parsed: RpcElement | RpcElement[] | undefined
      try {
        parsed = JSON.parse(text) as RpcElement | RpcElement[]
        methods = (Array.isArray(parsed) ? parsed : [parsed]).map((call) => call.method ?? '?')
      } catch {
        methods = ['(unparsed)']
      }
      const keys = prefix && text.toLowerCase().includes(prefix) ? keysIn(text.toLowerCase()) : []
      const perCall = keys.length > 0 && parsed !== undefined ? keysPerCall(parsed) : []
      trips.push({ at: performance.timeOrigin + performance.now(), methods, ...(perCall.length > 0 ? { keys: perCall } : {}) })
      if (keys.length > 0 && parsed !== undefined && (keys.some((key) => poisoned.has(key) || watched.has(key) || watchedPoison.has(key)))) {
        handleTagged(parsed, keys).then(
          (answer) => {
            outgoing.writeHead(200, { 'content-type': 'application/json' })
            outgoing.end(answer)
          },
          () => {
            outgoing.writeHead(502)
            outgoing.end()
          },
        )
        return
      }
      const forwarding = httpRequest(
        { host: upstream.hostname, port: upstream.port, path: upstream.pathname, method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': body.length } },
        (answer) => {
          outgoing.writeHead(answer.statusCode ?? 502, { 'content-type': answer.headers['content-type'] ?? 'application/json' })
          answer.pipe(outgoing)
        },
      )
      forwarding.on('error', () => {
        outgoing.writeHead(502)
        outgoing.end()
      })
      forwarding.end(body)
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
    tag(keyPrefix) {
      prefix = keyPrefix.toLowerCase().replace(/^0x/, '')
    },
    watch(key, action) {
      const bare = key.toLowerCase().replace(/^0x/, '')
      if (action.kind === 'close') watched.set(bare, action)
      else watchedPoison.set(bare, action)
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
        agent.destroy()
      }),
  }
}
