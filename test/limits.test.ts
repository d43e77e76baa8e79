import t from 'tap'
import { startAnvil } from '../core/devnet/anvil.ts'
import { OPERATOR_READ_INTERVAL_MS, sharedRead } from '../core/operators/sharedRead.ts'
import { describeWindow } from '../core/http/rateLimit.ts'
import { offlineConfig, startBruno } from './fixtures/bruno.ts'
import { postRaw } from './fixtures/mcpHttp.ts'
import { startParityProxy } from './fixtures/parityProxy.ts'
import { waitFor } from './fixtures/waitFor.ts'

// Limits that hold (issue 13, point 7): a JSON-RPC batch counts against the client's rate limit
// element by element, and the unlimited operator endpoints read each chain at most once per
// interval, however many requests arrive.

const status = (id: number | string) => ({ jsonrpc: '2.0', id, method: 'bruno_getStatus', params: { id: `no-such-id-${id}` } })

t.test('a JSON-RPC batch counts element by element against the client\'s limit', async (t) => {
  const env = { ...process.env }
  // The relay bindings are served with the bruno group; bruno_getStatus reads only the store.
  const limit = 5
  const config = offlineConfig(env, { groups: ['bruno'], server: { host: '127.0.0.1', port: 0, rateLimit: { max: limit, windowMs: 60_000 } } })
  const bruno = await startBruno(t, config, env)
  const rpc = `${bruno.server.url}/rpc`

  // One single request first: 1 of 5 used.
  const single = await postRaw(rpc, status(0))
  t.equal(single.status, 200)
  t.equal(single.json.error.code, 1002, 'run: an unknown id')

  // A batch of 8 with 4 left: its first 4 elements run, its last 4 are refused, each in its place.
  const batch = await postRaw(rpc, Array.from({ length: 8 }, (_, index) => status(index + 1)))
  t.equal(batch.status, 200, 'a batch is answered in an array, errors included')
  t.same(
    batch.json.map((answer: { id: number }) => answer.id),
    [1, 2, 3, 4, 5, 6, 7, 8],
    'every element is answered, in order',
  )
  const run = batch.json.filter((answer: { error: { code: number } }) => answer.error.code === 1002)
  const refused = batch.json.filter((answer: { error: { code: number } }) => answer.error.code === -32600)
  t.same(run.map((answer: { id: number }) => answer.id), [1, 2, 3, 4], 'exactly the 4 elements within the limit ran')
  t.same(refused.map((answer: { id: number }) => answer.id), [5, 6, 7, 8], 'the 4 past it did not')
  t.same(refused[0], {
    jsonrpc: '2.0',
    id: 5,
    error: { code: -32600, message: `Too many requests: at most ${limit} per 1 minute`, data: { code: 'rate_limited' } },
  })
  t.ok(Number(batch.headers.get('retry-after')) > 0, 'Retry-After says when to come back')

  // The batch used up the limit: the next single request is refused before its body is read.
  const next = await postRaw(rpc, status(9))
  t.equal(next.status, 429)
  t.same(next.json, { jsonrpc: '2.0', id: null, error: { code: -32600, message: `Too many requests: at most ${limit} per 1 minute`, data: { code: 'rate_limited' } } })
  const rest = await fetch(`${bruno.server.url}/v1/status/whatever`)
  t.equal(rest.status, 429, 'REST shares the count')
  t.equal((await fetch(`${bruno.server.url}/healthz`)).status, 200, 'the probes are not limited')
})

t.test('a batch larger than what is left: a fresh client\'s batch of 32 under a limit of 10', async (t) => {
  const env = { ...process.env }
  const config = offlineConfig(env, { groups: ['bruno'], server: { host: '127.0.0.1', port: 0, rateLimit: { max: 10, windowMs: 60_000 } } })
  const bruno = await startBruno(t, config, env)
  const rpc = `${bruno.server.url}/rpc`
  // Notifications count too: they run, unanswered. 2 of them first, then 30 answered requests.
  const notifications = [0, 1].map((index) => ({ jsonrpc: '2.0', method: 'bruno_getStatus', params: { id: `n${index}` } }))
  const batch = await postRaw(rpc, [...notifications, ...Array.from({ length: 30 }, (_, index) => status(index))])
  t.equal(batch.status, 200)
  t.equal(batch.json.length, 30, 'notifications are not answered')
  const ran = batch.json.filter((answer: { error: { code: number } }) => answer.error.code === 1002).length
  t.equal(ran, 8, '10 elements within the limit: the 2 notifications and 8 requests')
  t.equal(batch.json.length - ran, 22, 'the other 22 refused')
  t.equal((await postRaw(rpc, status('after'))).status, 429, 'and the client is at its limit')
})

t.test('the limit\'s window in words', async (t) => {
  t.equal(describeWindow(60_000), '1 minute')
  t.equal(describeWindow(1_000), '1 second')
  t.equal(describeWindow(90_000), '90 seconds')
  t.equal(describeWindow(7_200_000), '2 hours')
  t.equal(describeWindow(1_500), '1500 ms')
})

t.test('a shared read: one in flight for every caller, reused for the interval, failures too', async (t) => {
  let clock = 0
  let reads = 0
  let fail = false
  const read = sharedRead(
    async () => {
      reads++
      // Not a wait: the read's own latency, so the 50 callers arrive while it is in flight.
      await new Promise((resolve) => setTimeout(resolve, 20))
      if (fail) throw new Error(`read ${reads} failed`)
      return reads
    },
    1_000,
    () => clock,
  )
  t.same(await Promise.all(Array.from({ length: 50 }, () => read())), Array(50).fill(1), '50 concurrent callers, one read')
  clock = 999
  t.equal(await read(), 1, 'reused within the interval')
  clock = 1_000
  fail = true
  await t.rejects(read(), /read 2 failed/, 'read again once the interval has passed')
  clock = 1_500
  await t.rejects(read(), /read 2 failed/, 'a failure is reused too: a chain that does not answer is not asked again at once')
  t.equal(reads, 2)
})

t.test('50 concurrent /readyz and 50 /metrics read each chain once per interval', async (t) => {
  // Two chains, each behind its own counting proxy.
  // Bare chains whose clocks are now: /readyz judges the latest block's age.
  const anvils = await Promise.all([startAnvil({ chainId: 31337, historySec: 0 }), startAnvil({ chainId: 31338, historySec: 0 })])
  t.teardown(() => Promise.all(anvils.map((anvil) => anvil.stop())))
  const proxies = await Promise.all(anvils.map((anvil) => startParityProxy(anvil.rpcUrl)))
  t.teardown(() => Promise.all(proxies.map((proxy) => proxy.close())))

  const env: NodeJS.ProcessEnv = { ...process.env, BRUNO_TEST_RPC_A: proxies[0]!.url, BRUNO_TEST_RPC_B: proxies[1]!.url }
  const base = offlineConfig(env)
  const network = base.networks[0]!
  const config = {
    ...base,
    networks: [
      { ...network, name: 'one', chainId: 31337, rpcUrl: { env: 'BRUNO_TEST_RPC_A' } },
      { ...network, name: 'two', chainId: 31338, rpcUrl: { env: 'BRUNO_TEST_RPC_B' } },
    ],
  }
  // No bruno group: no runner, so every RPC request the proxies see is an operator endpoint's.
  const bruno = await startBruno(t, config, env, [proxies[0]!.url, proxies[1]!.url])
  const url = bruno.server.url

  const burst = async () => {
    const replies = await Promise.all([
      ...Array.from({ length: 50 }, () => fetch(`${url}/readyz`)),
      ...Array.from({ length: 50 }, () => fetch(`${url}/metrics`)),
    ])
    const bodies = await Promise.all(replies.map((reply) => reply.text()))
    return { statuses: replies.map((reply) => reply.status), bodies }
  }

  // Judged by when the reads reached the node, not by how many fit in a burst: on a loaded
  // machine a burst of 100 can outlast the interval, and then one more read is right.
  const METHODS = ['eth_getBlockByNumber', 'eth_getBalance'] as const
  const reads = (method: string) => proxies.map((proxy) => proxy.arrivals.filter((arrival) => arrival.method === method).map((arrival) => arrival.at))
  const spacedByTheInterval = (what: string) => {
    for (const method of METHODS) {
      for (const [chain, times] of reads(method).entries()) {
        const gaps = times.slice(1).map((at, index) => at - times[index]!)
        // A read starts at least the interval after the one before settled, so after it reached the node (ms rounding aside).
        t.ok(gaps.every((gap) => gap >= OPERATOR_READ_INTERVAL_MS - 1), `${what}: ${method} on chain ${chain + 1} at most once per ${OPERATOR_READ_INTERVAL_MS} ms (gaps: ${gaps.join(', ') || 'none'})`)
      }
    }
  }
  const onlyThoseTwo = () => proxies.every((proxy) => proxy.forwarded.total === proxy.forwarded.get('eth_getBlockByNumber') + proxy.forwarded.get('eth_getBalance'))

  const started = Date.now()
  const first = await burst()
  t.same(first.statuses, Array(100).fill(200), 'every probe and scrape answered')
  const readiness = JSON.parse(first.bodies[0]!)
  t.match(readiness, { ready: true, chains: [{ chain: 'one', ready: true }, { chain: 'two', ready: true }] })
  t.match(first.bodies[99], /bruno_runner_balance_wei\{chain="one",operator="0x[0-9a-fA-F]{40}"\} \d+/)
  t.match(first.bodies[99], /bruno_runner_balance_wei\{chain="two",operator="0x[0-9a-fA-F]{40}"\} \d+/)
  const again = await burst()
  t.same(again.statuses, Array(100).fill(200))
  const most = 1 + Math.floor((Date.now() - started) / OPERATOR_READ_INTERVAL_MS)
  for (const method of METHODS) {
    t.ok(reads(method).every((times) => times.length >= 1 && times.length <= most), `200 requests in ${Date.now() - started} ms: ${method} read ${reads(method).map((times) => times.length).join(' and ')} times, at most ${most} per chain`)
  }
  t.ok(onlyThoseTwo(), 'nothing else is read: only latest blocks and balances')
  spacedByTheInterval('two bursts')

  // Then single requests until each chain's reads are renewed: the shared reads expire.
  const counted = () => METHODS.map((method) => reads(method).map((times) => times.length))
  const before = counted()
  await waitFor(
    async () => {
      await Promise.all([fetch(`${url}/readyz`), fetch(`${url}/metrics`)].map((reply) => reply.then((answered) => answered.text())))
      return counted()
    },
    (now) => now.every((perChain, method) => perChain.every((count, chain) => count > before[method]![chain]!)),
    'the operator reads renewed',
    OPERATOR_READ_INTERVAL_MS * 10,
  )
  t.ok(onlyThoseTwo(), 'still nothing else')
  spacedByTheInterval('once the interval has passed')
})
