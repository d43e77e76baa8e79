import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pino from 'pino'
import { createPublicClient, createTestClient, encodeFunctionData, getAddress, http, parseSignature, type Address, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { devnetConfig } from '../config/devnet.ts'
import { Networks } from '../core/chain/networks.ts'
import { startAnvil } from '../core/devnet/anvil.ts'
import { deployDevnet, type DevnetDeployment } from '../core/devnet/deploy.ts'
import { mintUsdc } from '../core/devnet/fund.ts'
import type { RelayContext } from '../core/relay/context.ts'
import { quoteCall } from '../core/relay/quote.ts'
import { RunnerLoop } from '../core/runner/runner.ts'
import type { SubmitRequest } from '../core/relay/schemas.ts'
import { submissionStatus } from '../core/relay/status.ts'
import { SqliteSubmissionStore } from '../core/store/sqliteStore.ts'
import type { Submission } from '../core/store/store.ts'
import { submitCall } from '../core/relay/submit.ts'
import { eip3009Abi } from '../plugins/3009/abi.ts'
import { RawMcpClient } from '../test/fixtures/mcpHttp.ts'
import { signTransfer } from '../test/fixtures/signedTransfer.ts'
import type { RoundTrip } from './proxy.ts'
import { startProxyChild, startServerChild, type ProxyChild } from './processes.ts'
import { runSoak, type SoakOptions, type SoakResults } from './soak.ts'

export interface RelayBenchOptions {
  /** Accounts, each submitting once in the timed run (200). */
  readonly accounts: number
  /** Submissions in all, for the memory figure (1,000): the accounts submit again until there are this many. */
  readonly totalSubmissions: number
  /** ms between two arrivals in the timed run. */
  readonly arrivalMs: number
  /** anvil's block time in the timed run, in seconds. */
  readonly blockTimeSec: number
}

/** Round trips to the node for one operation, and the JSON-RPC methods in them. */
export interface TripCount {
  readonly roundTrips: number
  readonly methods: string[][]
}

export interface RelayResults {
  readonly setupSec: number
  readonly roundTrips: {
    readonly quote: TripCount
    readonly submit: TripCount
    /** A runner pass that sends N waiting submissions, per submission (the pass's nonce read excluded). */
    readonly runnerSend: TripCount & { readonly batch: number; readonly nonceRead: number }
    /** A runner pass that follows N sent submissions to `done`, per submission. */
    readonly runnerFollow: TripCount & { readonly batch: number }
  }
  readonly statusRead: { readonly memoryUs: number; readonly fileUs: number; readonly stored: number; readonly reads: number }
  readonly timed: TimedRun
  /** Held submissions and poison pills beside a legitimate workload (bench/soak.ts), when run. */
  readonly soak?: SoakResults
  readonly memory: {
    readonly submissions: number
    readonly rssBeforeMb: number
    readonly rssAfterTimedMb: number
    readonly rssAfterAllMb: number
    readonly growthMb: number
    /** Before the first and after the last submission, each after a full GC: what the submissions left held. */
    readonly heapBeforeMb: number
    readonly heapAfterAllGcMb: number
    readonly rssAfterAllGcMb: number
  }
}

export interface TimedRun {
  readonly submissions: number
  readonly done: number
  readonly failed: number
  readonly blockTimeSec: number
  readonly arrivalPerSec: number
  readonly submitToDoneMs: { readonly p50: number; readonly p99: number; readonly max: number }
  /** Blocks from the latest block at acceptance to the block including the transaction. */
  readonly blocksToInclusion: { readonly max: number; readonly histogram: Record<string, number> }
  readonly withinThreeBlocks: boolean
  readonly perBlock: { readonly blocks: number; readonly max: number; readonly mean: number }
  /** Round trips to the node over the whole run, per submission (Bruno's side: quote, submit, runner). */
  readonly roundTripsPerSubmission: number
  readonly methods: Record<string, number>
}

const silent = pino({ level: 'silent' })
export const MB = (bytes: number) => Math.round((bytes / 2 ** 20) * 10) / 10

function tripCount(trips: RoundTrip[], per = 1): TripCount {
  return { roundTrips: Math.round((trips.length / per) * 100) / 100, methods: trips.map((trip) => [...trip.methods]) }
}

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!
}

export interface Payer {
  readonly key: Hex
  readonly address: Address
}

/** A USDC-only account's call: a signed EIP-3009 gift of 0.01 USDC to a friend (flow 2). */
export async function giftCall(deployment: DevnetDeployment, payer: Payer, friend: Address) {
  const token = { address: deployment.usdc, name: 'USD Coin', version: '2', chainId: deployment.chainId }
  const gift = await signTransfer(payer.key, token, friend, 10_000n)
  const { v, r, s } = parseSignature(gift.signature)
  const m = gift.message
  return {
    to: deployment.usdc,
    data: encodeFunctionData({
      abi: eip3009Abi,
      functionName: 'transferWithAuthorization',
      args: [payer.address, friend, 10_000n, 0n, BigInt(m.validBefore), m.nonce, Number(v), r, s],
    }),
  }
}

async function payment(deployment: DevnetDeployment, payer: Payer, payee: Address, amount: bigint): Promise<SubmitRequest['payment']> {
  const token = { address: deployment.usdc, name: 'USD Coin', version: '2', chainId: deployment.chainId }
  const fee = await signTransfer(payer.key, token, payee, amount)
  return { token: deployment.usdc, authorization: fee.message, signature: fee.signature } as SubmitRequest['payment']
}

/** quote, submit and the runner's passes, in-process against the counting proxy, one at a time. */
async function countRoundTrips(deployment: DevnetDeployment, proxy: ProxyChild, payers: readonly Payer[], friend: Address) {
  const env: NodeJS.ProcessEnv = {}
  const config = devnetConfig({ ...deployment, rpcUrl: proxy.url }, env, { port: 0 })
  const network = new Networks(config, env).get('local')
  const store = new SqliteSubmissionStore(':memory:')
  const operator = privateKeyToAccount(deployment.runner.operator.privateKey)
  // No wake: the runner runs only when the bench runs a pass, so nothing else talks to the node.
  const context: RelayContext = { network, store, operator: operator.address, delegates: [], wake: () => {} }
  const payee = getAddress(config.networks[0]!.payee)
  const batch = payers.length

  const quotes: RoundTrip[][] = []
  const submits: RoundTrip[][] = []
  const ids: string[] = []
  for (const payer of payers) {
    const call = await giftCall(deployment, payer, friend)
    let mark = await proxy.count()
    const quote = await quoteCall(context, { call, token: 'USDC', payment: 'authorization' })
    quotes.push(await proxy.since(mark))
    const pay = await payment(deployment, payer, payee, BigInt(quote.amountBaseUnits))
    mark = await proxy.count()
    ids.push((await submitCall(context, { call, payment: pay })).id)
    submits.push(await proxy.since(mark))
  }
  // One pass of a runner that is never started: woken once, then stopped (which waits for the pass).
  // A fresh loop per pass reads the runner's nonce first: those round trips are counted apart.
  const pass = async () => {
    const runner = new RunnerLoop(context, operator, silent)
    const mark = await proxy.count()
    runner.wake()
    await runner.stop()
    return await proxy.since(mark)
  }
  // anvil automines here: every send is mined at once, and the next pass takes each to done.
  const sendPass = await pass()
  const followPass = await pass()
  const active = await store.active('local')
  if (active.length > 0) throw new Error(`round-trip count: ${active.length} submissions not done after the follow pass`)
  const isNonceRead = (trip: RoundTrip) => trip.methods.includes('eth_getTransactionCount')
  const nonceRead = sendPass.filter(isNonceRead).length
  const sendTrips = sendPass.filter((trip) => !isNonceRead(trip))
  const followTrips = followPass.filter((trip) => !isNonceRead(trip))
  const one = (trips: RoundTrip[][]) => ({ roundTrips: Math.max(...trips.map((t) => t.length)), methods: trips[0]!.map((trip) => [...trip.methods]) })
  const stored = await store.get(ids[0]!)
  await store.close()
  return {
    counts: {
      quote: one(quotes),
      submit: one(submits),
      runnerSend: { ...tripCount(sendTrips, batch), batch, nonceRead },
      runnerFollow: { ...tripCount(followTrips, batch), batch },
    },
    sample: stored!,
  }
}

/** The store's cost of one `status` read, with `stored` submissions in it, in memory and in a file. */
export async function statusReadCost(sample: Submission, stored: number, reads: number) {
  const dir = mkdtempSync(join(tmpdir(), 'bruno-bench-'))
  try {
    const cost = async (path: string) => {
      const store = new SqliteSubmissionStore(path)
      const ids: string[] = []
      for (let i = 0; i < stored; i++) {
        const id = randomUUID()
        ids.push(id)
        await store.insert({ ...sample, id, stage: 'done' })
      }
      for (let i = 0; i < 1000; i++) await submissionStatus(store, ids[i % ids.length]!)
      const started = process.hrtime.bigint()
      for (let i = 0; i < reads; i++) {
        if (!(await submissionStatus(store, ids[(i * 7919) % ids.length]!))) throw new Error('status read missed')
      }
      const us = Number(process.hrtime.bigint() - started) / 1000 / reads
      await store.close()
      return Math.round(us * 100) / 100
    }
    return { memoryUs: await cost(':memory:'), fileUs: await cost(join(dir, 'bruno.sqlite')), stored, reads }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

interface Tracked {
  readonly id: string
  readonly acceptedAt: number
  readonly arrivalBlock: bigint
  doneAt?: number
  block?: bigint
  stage?: string
}

/**
 * A lean modern-era MCP caller for the driver (no output validation: the bench checks its first
 * answers with the tests' validating client, then keeps its own CPU for the load).
 */
export class LeanMcp {
  #id = 0
  constructor(readonly url: string) {}

  async call(name: string, args: Record<string, unknown>): Promise<any> {
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: ++this.#id,
      method: 'tools/call',
      params: { name, arguments: args, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } },
    })
    const response = await fetch(this.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': name },
      body,
    })
    const reply = (await response.json()) as any
    const result = reply?.result
    if (response.status !== 200 || !result) throw new Error(`${name}: HTTP ${response.status} ${JSON.stringify(reply).slice(0, 300)}`)
    if (result.isError) throw new Error(`${name} refused: ${result.content?.[0]?.text}`)
    return result.structuredContent
  }
}

/**
 * Submissions over MCP to Bruno (a child process) at a steady arrival rate, each by its own
 * account (quote → sign the fee → submit), then followed with `status` until done or failed.
 */
async function submitWave(
  mcp: LeanMcp,
  deployment: DevnetDeployment,
  wave: { payer: Payer; call: { to: Address; data: Hex } }[],
  arrivalMs: number,
  payee: Address,
  latestBlock: () => bigint,
  deadlineMs: number,
): Promise<Tracked[]> {
  const tracked: Tracked[] = []
  const failures: string[] = []
  const started = performance.now()
  const arrivals = wave.map(async ({ payer, call }, index) => {
    const due = started + index * arrivalMs - performance.now()
    if (due > 0) await new Promise((resolve) => setTimeout(resolve, due))
    try {
      const quote = await mcp.call('quote', { chain: 'local', call, token: 'USDC', payment: 'authorization' })
      const pay = await payment(deployment, payer, payee, BigInt(quote.amountBaseUnits))
      const accepted = await mcp.call('submit', { chain: 'local', call, payment: pay })
      tracked.push({ id: accepted.id, acceptedAt: performance.now(), arrivalBlock: latestBlock() })
    } catch (error) {
      failures.push(error instanceof Error ? error.message : String(error))
    }
  })
  // Follow every accepted submission until all are done or failed (bounded by the deadline).
  let arrived = false
  void Promise.all(arrivals).then(() => (arrived = true))
  const give = performance.now() + deadlineMs
  while (performance.now() < give) {
    const open = tracked.filter((item) => item.doneAt === undefined)
    if (arrived && open.length === 0) break
    for (let i = 0; i < open.length; i += 50) {
      await Promise.all(
        open.slice(i, i + 50).map(async (item) => {
          const status = await mcp.call('status', { id: item.id })
          if (status.stage === 'done' || status.stage === 'failed') {
            item.doneAt = performance.now()
            item.stage = status.stage
            if (status.transaction?.blockNumber) item.block = BigInt(status.transaction.blockNumber)
          }
        }),
      )
    }
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  await Promise.all(arrivals)
  if (failures.length > 0) throw new Error(`${failures.length} submissions were not accepted; first: ${failures[0]}`)
  return tracked
}

function summarize(tracked: Tracked[], options: RelayBenchOptions, trips: RoundTrip[]): TimedRun {
  const done = tracked.filter((item) => item.stage === 'done')
  const times = done.map((item) => item.doneAt! - item.acceptedAt).sort((a, b) => a - b)
  const blocks = done.map((item) => Number(item.block! - item.arrivalBlock))
  const histogram: Record<string, number> = {}
  for (const b of blocks) histogram[b] = (histogram[b] ?? 0) + 1
  const perBlock = new Map<bigint, number>()
  for (const item of done) perBlock.set(item.block!, (perBlock.get(item.block!) ?? 0) + 1)
  const counts = [...perBlock.values()]
  const methods: Record<string, number> = {}
  for (const trip of trips) for (const method of trip.methods) methods[method] = (methods[method] ?? 0) + 1
  const maxBlocks = blocks.length ? Math.max(...blocks) : NaN
  return {
    submissions: tracked.length,
    done: done.length,
    failed: tracked.filter((item) => item.stage === 'failed').length,
    blockTimeSec: options.blockTimeSec,
    arrivalPerSec: Math.round(1000 / options.arrivalMs),
    submitToDoneMs: { p50: Math.round(percentile(times, 50)), p99: Math.round(percentile(times, 99)), max: Math.round(times.at(-1) ?? NaN) },
    blocksToInclusion: { max: maxBlocks, histogram },
    withinThreeBlocks: done.length === tracked.length && maxBlocks <= 3,
    perBlock: { blocks: counts.length, max: Math.max(...counts), mean: Math.round((done.length / Math.max(1, counts.length)) * 10) / 10 },
    roundTripsPerSubmission: Math.round((trips.length / Math.max(1, tracked.length)) * 10) / 10,
    methods,
  }
}

/** The relay bench's devnet: anvil with the contracts, the counting proxy before it, funded USDC-only accounts. */
export interface RelayDevnet {
  readonly rpcUrl: string
  readonly deployment: DevnetDeployment
  readonly proxy: ProxyChild
  readonly payers: readonly Payer[]
  /** Receives the gifts (flow 2's calls). */
  readonly friend: Address
  readonly setupSec: number
}

/**
 * Runs `body` on a fresh devnet: anvil (automine) with the contracts deployed, the counting proxy
 * in front of it in a process of its own, and `accounts` fresh accounts holding 100 USDC each;
 * everything stopped afterwards.
 */
export async function withRelayDevnet<T>(accounts: number, log: (line: string) => void, body: (devnet: RelayDevnet) => Promise<T>): Promise<T> {
  const setupStarted = performance.now()
  // Deploying and funding run on automine (a block per transaction); the timed runs then switch
  // anvil to a block every `blockTimeSec`, as `startAnvil({ blockTime })` would have run it.
  const anvil = await startAnvil()
  const stops: (() => Promise<void>)[] = [() => anvil.stop()]
  try {
    const deployment = await deployDevnet(anvil.rpcUrl)
    const proxy = await startProxyChild(anvil.rpcUrl)
    stops.unshift(() => proxy.stop())
    const payers: Payer[] = Array.from({ length: accounts }, () => {
      const key = generatePrivateKey()
      return { key, address: privateKeyToAccount(key).address }
    })
    const friend = privateKeyToAccount(generatePrivateKey()).address
    for (const payer of payers) await mintUsdc(anvil.rpcUrl, deployment, payer.address, 100_000_000n)
    const setupSec = Math.round((performance.now() - setupStarted) / 100) / 10
    log(`  devnet deployed, ${payers.length} accounts funded with USDC in ${setupSec} s`)
    return await body({ rpcUrl: anvil.rpcUrl, deployment, proxy, payers, friend, setupSec })
  } finally {
    for (const stop of stops) await stop()
  }
}

/** A submission as the store keeps it once done (one of `countRoundTrips`'), to size the store with. */
export async function storedSample(devnet: RelayDevnet): Promise<Submission> {
  return (await countRoundTrips(devnet.deployment, devnet.proxy, devnet.payers.slice(0, 1), devnet.friend)).sample
}

/**
 * The relay on the local chain: RPC round trips per quote, submit and runner send (counted by a
 * loopback proxy in front of anvil); the store's cost per status read; then Bruno in a child
 * process, anvil mining every `blockTimeSec`, `accounts` USDC-only accounts each submitting once
 * (flow 2: a signed EIP-3009 transfer pays), and more until `totalSubmissions` for memory; then,
 * with `soak`, the soak (bench/soak.ts) on the same devnet, in a Bruno of its own.
 */
export async function runRelayBench(options: RelayBenchOptions, log: (line: string) => void, soak?: SoakOptions): Promise<RelayResults> {
  return withRelayDevnet(options.accounts, log, async (devnet) => {
    const { deployment, proxy, payers, friend, setupSec } = devnet
    const { counts, sample } = await countRoundTrips(deployment, proxy, payers.slice(0, 5), friend)
    log(`  round trips: quote ${counts.quote.roundTrips}, submit ${counts.submit.roundTrips}, runner send ${counts.runnerSend.roundTrips}, follow ${counts.runnerFollow.roundTrips}`)
    const statusRead = await statusReadCost(sample, 1_000, 20_000)
    log(`  status read: ${statusRead.memoryUs} µs (memory), ${statusRead.fileUs} µs (file)`)

    // Every submission's call (a signed gift), signed before the clock starts.
    const rounds = Math.ceil(options.totalSubmissions / payers.length)
    const calls: { payer: Payer; call: { to: Address; data: Hex } }[][] = []
    for (let round = 0; round < rounds; round++) {
      const wave = []
      for (const payer of payers.slice(0, Math.min(payers.length, options.totalSubmissions - round * payers.length))) {
        wave.push({ payer, call: await giftCall(deployment, payer, friend) })
      }
      calls.push(wave)
    }

    // Every submission comes from one client (127.0.0.1): the memory run's waves keep more than the
    // default 64 active at once (relay.admission.client.maxActive), so the bench raises it.
    const network = { relay: { admission: { client: { maxActive: options.totalSubmissions } } } }
    const bruno = await startServerChild('bruno', [], { ...process.env, BENCH_DEVNET: JSON.stringify(deployment), BENCH_RPC_URL: proxy.url, BENCH_NETWORK: JSON.stringify(network) })
    let results: Omit<RelayResults, 'soak'>
    try {
      const payee = deployment.payeeVault
      // A quote's shape, checked once against the tool's outputSchema by the tests' client.
      const checked = new RawMcpClient(`${bruno.url}/mcp/bruno`)
      const first = calls[0]![0]!
      await checked.call('quote', { chain: 'local', call: first.call, token: 'USDC', payment: 'authorization' })
      const mcp = new LeanMcp(`${bruno.url}/mcp/bruno`)

      const test = createTestClient({ mode: 'anvil', transport: http(devnet.rpcUrl) })
      await test.setAutomine(false)
      await test.setIntervalMining({ interval: options.blockTimeSec })
      const chain = createPublicClient({ transport: http(devnet.rpcUrl) })
      let latest = await chain.getBlockNumber({ cacheTime: 0 })
      let watching = true
      const watcher = (async () => {
        while (watching) {
          // Uncached: viem keeps a block number for its polling interval (4 s) by default.
          latest = await chain.getBlockNumber({ cacheTime: 0 })
          await new Promise((resolve) => setTimeout(resolve, 50))
        }
      })()
      try {
        const before = await bruno.stats(true)
        const rssBefore = before.rss
        const mark = await proxy.count()
        const timedTracked = await submitWave(mcp, deployment, calls[0]!, options.arrivalMs, payee, () => latest, 120_000)
        const timed = summarize(timedTracked, options, await proxy.since(mark))
        log(`  timed: ${timed.done}/${timed.submissions} done, submit→done p50 ${timed.submitToDoneMs.p50} ms p99 ${timed.submitToDoneMs.p99} ms, max ${timed.blocksToInclusion.max} blocks`)
        const rssAfterTimed = (await bruno.stats()).rss
        let total = timedTracked.length
        for (const wave of calls.slice(1)) {
          const more = await submitWave(mcp, deployment, wave, Math.max(5, Math.floor(options.arrivalMs / 2)), payee, () => latest, 120_000)
          const open = more.filter((item) => item.stage !== 'done')
          if (open.length > 0) throw new Error(`memory run: ${open.length} submissions not done`)
          total += more.length
        }
        const rssAfterAll = (await bruno.stats()).rss
        const collected = await bruno.stats(true)
        log(
          `  memory: RSS ${MB(rssBefore)} MB → ${MB(rssAfterTimed)} MB after ${timedTracked.length} → ${MB(rssAfterAll)} MB after ${total}; ` +
            `after a full GC: RSS ${MB(collected.rss)} MB, heap ${MB(before.heapUsed)} → ${MB(collected.heapUsed)} MB`,
        )
        results = {
          setupSec,
          roundTrips: counts,
          statusRead,
          timed,
          memory: {
            submissions: total,
            rssBeforeMb: MB(rssBefore),
            rssAfterTimedMb: MB(rssAfterTimed),
            rssAfterAllMb: MB(rssAfterAll),
            growthMb: MB(rssAfterAll - rssBefore),
            heapBeforeMb: MB(before.heapUsed),
            heapAfterAllGcMb: MB(collected.heapUsed),
            rssAfterAllGcMb: MB(collected.rss),
          },
        }
      } finally {
        watching = false
        await watcher
      }
    } finally {
      // Stopped before the soak's Bruno starts: two runners must never share the runner key.
      await bruno.stop()
    }
    if (!soak) return results
    log(`Soak: held submissions and poison pills`)
    return { ...results, soak: await runSoak(devnet, soak, log, sample) }
  })
}
