import { mkdirSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { ExactEvmScheme } from '@x402/evm/exact/client'
import { decodePaymentResponseHeader, wrapFetchWithPaymentFromConfig } from '@x402/fetch'
import { createTestClient, http, type Address, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import type { DevnetDeployment } from '../core/devnet/deploy.ts'
import { signTransfer } from '../test/fixtures/signedTransfer.ts'
import { loadAverageNow, machine } from './machine.ts'
import { startServerChild } from './processes.ts'
import type { RoundTrip } from './proxy.ts'
import { giftCall, percentile, withRelayDevnet, type Payer } from './relay.ts'

/**
 * `npm run bench:x402 [-- --smoke]`: issue 30's figures for the x402 binding (`POST /local/v1/x402`).
 *
 * On a fresh devnet (bench/relay.ts's: anvil, the contracts, the counting proxy in a process of its
 * own, fresh accounts holding only USDC), Bruno in a child process (groups `bruno`, as the x402
 * tests serve it) reaching the node only through the proxy; anvil switched to a block every 2 s
 * once everything is deployed and funded. Each payment is a fresh account's signed USDC gift to a
 * friend, `payments` of them, `concurrency` at a time (a worker takes the next once its own is
 * answered), paid two ways:
 * - **x402**: one call of `@x402/fetch`'s wrapped fetch with `@x402/evm`'s `ExactEvmScheme`, as an
 *   agent would make it: the 402, the signing and the paid retry held until mined, timed from the
 *   call to its answer (200, or 202 `settlement_pending` after `x402.holdSec`, 120 s by default);
 * - **REST**: `POST /local/v1/quote`, the fee signed as `payment_authorization`'s typed data,
 *   `POST /local/v1/submit`, then `GET /v1/status/<id>` every 250 ms (the x402 hold reads the store
 *   as often) until done, timed from the quote to the status that says done.
 * The node requests Bruno makes while a binding's payments run (quotes, submits, the runner's sends
 * and follows) are counted by the proxy, both as HTTP requests (a JSON-RPC batch is one) and as
 * JSON-RPC calls (each element of a batch), until every one of its submissions is done. Each binding
 * is warmed up first (JIT, the runner's nonce, the token's EIP-712 domain that x402 reads once per
 * token), uncounted. `--smoke`: 10 payments of each, to check that the bench runs.
 */

const smoke = process.argv.includes('--smoke')
const options = smoke ? { payments: 10, concurrency: 10, warmup: 1, blockTimeSec: 2 } : { payments: 100, concurrency: 10, warmup: 5, blockTimeSec: 2 }
const log = (line: string) => process.stdout.write(`${line}\n`)
const STATUS_POLL_MS = 250

/** One payment: how long it took, and the HTTP status it ended with (REST: 200 once `status` says done). */
interface Paid {
  readonly ms: number
  readonly status: number
  readonly id: string
}

/** What Bruno asked the node while one binding's payments ran, in all and per payment. */
interface NodeRequests {
  readonly httpRequests: number
  readonly calls: number
  readonly httpRequestsPerPayment: number
  readonly callsPerPayment: number
  /** JSON-RPC calls per payment, by method. */
  readonly methodsPerPayment: Record<string, number>
}

interface BindingRun {
  readonly payments: number
  readonly seconds: number
  readonly latencyMs: { readonly p50: number; readonly p99: number; readonly mean: number; readonly max: number }
  /** How many payments ended with each HTTP status. */
  readonly statuses: Record<string, number>
  readonly node: NodeRequests
}

const round = (value: number, places = 1) => Math.round(value * 10 ** places) / 10 ** places
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Runs `work` on each item, `concurrency` at a time; each worker takes the next item once its own is done. */
async function inTurn<T, R>(items: readonly T[], concurrency: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = []
  let next = 0
  const worker = async () => {
    while (next < items.length) {
      const index = next++
      results[index] = await work(items[index]!)
    }
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker))
  return results
}

async function answer(response: Response, expected: number, what: string): Promise<any> {
  const body = (await response.json()) as any
  if (response.status !== expected) throw new Error(`${what}: HTTP ${response.status} ${JSON.stringify(body).slice(0, 300)}`)
  return body
}

const postJson = (url: string, body: unknown) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })

/** A payment by the official x402 client: one call of the wrapped fetch, timed to its answer. */
async function payByX402(base: string, deployment: DevnetDeployment, payer: Payer, call: { to: Address; data: Hex }): Promise<Paid> {
  const pay = wrapFetchWithPaymentFromConfig(fetch, {
    schemes: [{ network: 'eip155:*', client: new ExactEvmScheme(privateKeyToAccount(payer.key)) }],
    // The client pays only a short built-in list of tokens unless told otherwise.
    spendControls: { allowedAssets: [{ network: `eip155:${deployment.chainId}`, asset: deployment.usdc }] },
  })
  const started = performance.now()
  const response = await pay(`${base}/local/v1/x402`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ call }) })
  const ms = performance.now() - started
  const body = (await response.json()) as any
  const header = response.headers.get('payment-response')
  const settled = header ? decodePaymentResponseHeader(header) : undefined
  const answered = response.status === 200 ? settled?.success === true && body.stage === 'done' : response.status === 202 && settled?.errorReason === 'settlement_pending'
  if (!answered) throw new Error(`x402: HTTP ${response.status} ${JSON.stringify(settled)} ${JSON.stringify(body).slice(0, 300)}`)
  return { ms, status: response.status, id: body.id }
}

/** A payment over the plain REST binding: quote, sign the fee, submit, then status until done. */
async function payByRest(base: string, deployment: DevnetDeployment, payer: Payer, call: { to: Address; data: Hex }): Promise<Paid> {
  const usdc = { address: deployment.usdc, name: 'USD Coin', version: '2', chainId: deployment.chainId }
  const started = performance.now()
  const quote = await answer(await postJson(`${base}/local/v1/quote`, { call, token: 'USDC', payment: 'authorization' }), 200, 'quote')
  const fee = await signTransfer(payer.key, usdc, quote.payee, BigInt(quote.amountBaseUnits))
  const payment = { token: deployment.usdc, authorization: fee.message, signature: fee.signature }
  const accepted = await answer(await postJson(`${base}/local/v1/submit`, { call, payment }), 202, 'submit')
  for (;;) {
    const status = await answer(await fetch(`${base}/v1/status/${accepted.id}`), 200, 'status')
    if (status.stage === 'done') return { ms: performance.now() - started, status: 200, id: accepted.id }
    if (status.stage === 'failed') throw new Error(`REST: submission ${accepted.id} failed: ${status.reason}`)
    await sleep(STATUS_POLL_MS)
  }
}

/** Waits until each submission is done: a payment answered 202 is still under way, and its node requests count. */
async function allDone(base: string, ids: readonly string[]): Promise<void> {
  for (const id of ids) {
    for (;;) {
      const status = await answer(await fetch(`${base}/v1/status/${id}`), 200, 'status')
      if (status.stage === 'done') break
      if (status.stage === 'failed') throw new Error(`submission ${id} failed: ${status.reason}`)
      await sleep(STATUS_POLL_MS)
    }
  }
}

function nodeRequests(trips: readonly RoundTrip[], payments: number): NodeRequests {
  const methods: Record<string, number> = {}
  for (const trip of trips) for (const method of trip.methods) methods[method] = (methods[method] ?? 0) + 1
  const calls = trips.reduce((sum, trip) => sum + trip.methods.length, 0)
  return {
    httpRequests: trips.length,
    calls,
    httpRequestsPerPayment: round(trips.length / payments, 2),
    callsPerPayment: round(calls / payments, 2),
    methodsPerPayment: Object.fromEntries(Object.entries(methods).sort(([, a], [, b]) => b - a).map(([method, count]) => [method, round(count / payments, 2)])),
  }
}

function latency(paid: readonly Paid[]) {
  const times = paid.map((each) => each.ms).sort((a, b) => a - b)
  const mean = times.reduce((sum, ms) => sum + ms, 0) / times.length
  return { p50: Math.round(percentile(times, 50)), p99: Math.round(percentile(times, 99)), mean: Math.round(mean), max: Math.round(times.at(-1)!) }
}

const started = performance.now()
const host = machine()
log(`Bruno x402 bench${smoke ? ' (smoke)' : ''}: ${host.cpu}, ${host.cores} cores, Node ${host.node}, commit ${host.commit}, load average ${host.loadAverage}`)
const perBinding = options.warmup + options.payments
const results = await withRelayDevnet(2 * perBinding, log, async (devnet) => {
  const { deployment, proxy } = devnet
  // Every gift signed before the clock starts: each payer pays once, the x402 ones first.
  const gifts = await Promise.all(devnet.payers.map(async (payer) => ({ payer, call: await giftCall(deployment, payer, devnet.friend) })))
  const x402Gifts = gifts.slice(0, perBinding)
  const restGifts = gifts.slice(perBinding)

  const bruno = await startServerChild('bruno', [], { ...process.env, BENCH_DEVNET: JSON.stringify(deployment), BENCH_RPC_URL: proxy.url, BENCH_GROUPS: 'bruno' })
  try {
    const test = createTestClient({ mode: 'anvil', transport: http(devnet.rpcUrl) })
    await test.setAutomine(false)
    await test.setIntervalMining({ interval: options.blockTimeSec })

    const run = async (name: string, list: typeof gifts, pay: typeof payByX402): Promise<BindingRun> => {
      const warm = await inTurn(list.slice(0, options.warmup), options.concurrency, ({ payer, call }) => pay(bruno.url, deployment, payer, call))
      await allDone(bruno.url, warm.map((each) => each.id))
      const measured = list.slice(options.warmup)
      const mark = await proxy.count()
      const phaseStarted = performance.now()
      const paid = await inTurn(measured, options.concurrency, ({ payer, call }) => pay(bruno.url, deployment, payer, call))
      const seconds = round((performance.now() - phaseStarted) / 1000)
      await allDone(bruno.url, paid.map((each) => each.id))
      const node = nodeRequests(await proxy.since(mark), measured.length)
      const statuses: Record<string, number> = {}
      for (const each of paid) statuses[each.status] = (statuses[each.status] ?? 0) + 1
      const result = { payments: measured.length, seconds, latencyMs: latency(paid), statuses, node }
      log(
        `  ${name}: ${result.payments} payments in ${seconds} s, p50 ${result.latencyMs.p50} ms, p99 ${result.latencyMs.p99} ms, mean ${result.latencyMs.mean} ms; ` +
          `statuses ${JSON.stringify(statuses)}; node: ${node.callsPerPayment} JSON-RPC calls in ${node.httpRequestsPerPayment} HTTP requests per payment`,
      )
      return result
    }
    const x402 = await run('x402', x402Gifts, payByX402)
    const rest = await run('REST quote → submit → status', restGifts, payByRest)
    return { x402, rest }
  } finally {
    await bruno.stop()
  }
})

const { x402, rest } = results
const ratio = {
  calls: round(x402.node.callsPerPayment / rest.node.callsPerPayment, 2),
  httpRequests: round(x402.node.httpRequestsPerPayment / rest.node.httpRequestsPerPayment, 2),
}
const share200 = round(((x402.statuses['200'] ?? 0) / x402.payments) * 100)
const perPayment = (run: BindingRun) => Object.entries(run.node.methodsPerPayment).map(([method, count]) => `${method} ${count}`).join(', ')
const seconds = Math.round((performance.now() - started) / 1000)
log('')
log(`${options.payments} payments per binding, ${options.concurrency} at a time, a block every ${options.blockTimeSec} s:`)
log(`| binding | p50 ms | p99 ms | mean ms | max ms | answered 200 | node calls / payment | node HTTP requests / payment |`)
log(`|---|--:|--:|--:|--:|--:|--:|--:|`)
log(`| x402 (request → 200) | ${x402.latencyMs.p50} | ${x402.latencyMs.p99} | ${x402.latencyMs.mean} | ${x402.latencyMs.max} | ${share200}% | ${x402.node.callsPerPayment} | ${x402.node.httpRequestsPerPayment} |`)
log(`| REST (quote → status done) | ${rest.latencyMs.p50} | ${rest.latencyMs.p99} | ${rest.latencyMs.mean} | ${rest.latencyMs.max} | — | ${rest.node.callsPerPayment} | ${rest.node.httpRequestsPerPayment} |`)
log(`x402 / REST node requests per payment: ${ratio.calls}× by JSON-RPC calls, ${ratio.httpRequests}× by HTTP requests`)
log(`x402 calls per payment: ${perPayment(x402)}`)
log(`REST calls per payment: ${perPayment(rest)}`)
log(`(${seconds} s; load average ${host.loadAverage} at the start, ${loadAverageNow()} at the end)`)

const out = fileURLToPath(new URL('./out/', import.meta.url))
mkdirSync(out, { recursive: true })
const file = `${out}x402-${new Date().toISOString().replace(/[:.]/g, '-')}${smoke ? '-smoke' : ''}.json`
writeFileSync(file, `${JSON.stringify({ date: new Date().toISOString(), smoke, seconds, machine: { ...host, loadAverageAtEnd: loadAverageNow() }, options, x402: { ...x402, share200 }, rest, ratio }, null, 2)}\n`)
log(`wrote ${file}`)
