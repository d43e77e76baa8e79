import { mkdirSync, writeFileSync } from 'node:fs'
import pino from 'pino'
import { createPublicClient, createTestClient, createWalletClient, encodeFunctionData, getAddress, http, keccak256, parseAbi, recoverTransactionAddress, type Address, type Hex, type LocalAccount } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import type { StoreConfig } from '../config/schema.ts'
import { devnetConfig } from '../config/devnet.ts'
import { Networks } from '../core/chain/networks.ts'
import { startAnvil } from '../core/devnet/anvil.ts'
import { deployDevnet, type DevnetDeployment } from '../core/devnet/deploy.ts'
import { Metrics } from '../core/metrics.ts'
import type { RelayContext } from '../core/relay/context.ts'
import { observedStore } from '../core/store/observedStore.ts'
import { openStore } from '../core/store/openStore.ts'
import { quoteCall } from '../core/relay/quote.ts'
import { RunnerLoop } from '../core/runner/runner.ts'
import { RUNNER_OPERATOR_SET_GAS } from '../core/relay/runnerCall.ts'
import type { SubmitRequest } from '../core/relay/schemas.ts'
import type { SubmissionStore } from '../core/store/store.ts'
import { submitCall } from '../core/relay/submit.ts'
import { signTransfer } from '../test/fixtures/signedTransfer.ts'
import { machine } from './machine.ts'
import { giftCall, percentile, type Payer } from './relay.ts'

/**
 * `npm run bench:lanes [-- --smoke]`: issue 33's figures — the relay on a devnet mining a block every
 * 2 s, its runner in-process as `npm start` runs it (`quoteCall`, `submitCall`, the runner loop
 * started; no HTTP). Arrivals come at a fixed rate for `WINDOW_SEC`, each a fresh USDC-only
 * account's signed gift paid by signed transfer (flow 2: quote, sign, submit). A rate is sustained
 * when every submission of its window is included within 2 blocks of the block it arrived in;
 * capacity is the block's gas limit ÷ one relay's gas (the median receipt) ÷ 2 s.
 *
 * 1. Throughput: 1, 4 and 16 lanes on SQLite, rates rising until one is not sustained; at each
 *    lane count's highest sustained rate, where the runner's time went per submission sent (its
 *    node round trips by method, its store calls, its signatures).
 * 2. A stuck lane: 4 lanes, the first behind a node that takes its transactions and never includes
 *    them, against the same relay with none stuck: a legitimate submission's latency.
 * 3. Replicas (with PostgreSQL, `BRUNO_TEST_PG_URL`, as `.ci/with-postgres` sets it): 16 lanes on
 *    one replica, then on two dividing them, rates rising.
 */

const smoke = process.argv.includes('--smoke')
/** `-- --parts=throughput,stuck,replicas` (the default: all three) runs only those named. */
const PARTS = new Set(process.argv.find((arg) => arg.startsWith('--parts='))?.slice('--parts='.length).split(',') ?? ['throughput', 'stuck', 'replicas'])
const LANE_COUNTS = smoke ? [1, 4] : [1, 4, 16]
const RATES = smoke ? [2] : [8, 16, 32, 48, 64, 80, 96]
const REPLICA_RATES = smoke ? [2] : [32, 48, 64, 80, 96]
const STUCK_RATE = smoke ? 2 : 8
const STUCK_AFTER_MS = 4_000
const WINDOW_SEC = smoke ? 4 : 8
const BLOCK_SEC = 2
const log = (line: string) => process.stdout.write(`${line}\n`)
const silent = pino({ level: 'silent' })
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const mean = (values: readonly number[]) => Math.round(values.reduce((sum, value) => sum + value, 0) / Math.max(1, values.length))

interface Arrival {
  readonly id: string
  readonly arrivedAt: number
  readonly arrivalBlock: bigint
  readonly quoteMs: number
  readonly submitMs: number
}

/** Where the runner's time went in one window, per submission it sent: ms busy (summed over concurrent work) and calls. */
interface Breakdown {
  readonly sent: number
  readonly rpc: Record<string, { readonly ms: number; readonly calls: number }>
  readonly store: Record<string, { readonly ms: number; readonly calls: number }>
  readonly signMs: number
}

interface RateRun {
  readonly rate: number
  readonly submissions: number
  readonly withinTwoBlocks: number
  readonly sustained: boolean
  readonly blocksToInclusion: { readonly p50: number; readonly p99: number; readonly max: number }
  readonly ms: { readonly quote: number; readonly submit: number; readonly toSent: number; readonly sentToDone: number; readonly arrivalToDone: { readonly p50: number; readonly p99: number } }
  readonly gasUsed: readonly number[]
  readonly onLanes: Record<Address, number>
  readonly breakdown: Breakdown
}

interface RigOptions {
  readonly lanes: number
  readonly store: StoreConfig
  readonly replicas?: number
  /** A lane whose transactions the node takes and never includes. */
  readonly blackHole?: Address
}

/** The relay under test: the callers' context (quote, submit), each replica's runner, and the runners' time. */
interface Rig {
  readonly context: RelayContext
  readonly store: SubmissionStore
  readonly runners: readonly RunnerLoop[]
  /** Starts a window's count afresh; `breakdown` reads it. */
  resetTiming(): void
  breakdown(sent: number): Promise<Breakdown>
  close(): Promise<void>
}

const anvil = await startAnvil()
try {
  const setupStarted = performance.now()
  const deployment = await deployDevnet(anvil.rpcUrl, { lanes: Math.max(...LANE_COUNTS, 16) - 1 })
  const client = createPublicClient({ transport: http(anvil.rpcUrl), pollingInterval: 100 })
  const testClient = createTestClient({ mode: 'anvil', transport: http(anvil.rpcUrl) })
  const friend = privateKeyToAccount(generatePrivateKey()).address
  const operators = [deployment.runner.operator, ...deployment.runner.lanes].map(({ address }) => getAddress(address))
  log(`  devnet with ${operators.length} lanes in ${Math.round((performance.now() - setupStarted) / 1000)} s`)
  const host = machine()
  const sqlite: StoreConfig = { kind: 'sqlite', path: ':memory:' }

  /** `rates` in turn until one is not sustained, on a rig made for the run; each window's payers funded just before it. */
  const rising = async (label: string, options: RigOptions, rates: readonly number[]): Promise<RateRun[]> => {
    const rig = await startRig(deployment, options)
    const runs: RateRun[] = []
    try {
      for (const rate of rates) {
        const run = await window(rig, rate)
        runs.push(run)
        log(`  ${label}, ${rate}/s: ${run.withinTwoBlocks} of ${run.submissions} within 2 blocks (p99 ${run.blocksToInclusion.p99} blocks); arrival → sent ${run.ms.toSent} ms`)
        if (!run.sustained) break
      }
    } finally {
      await rig.close()
    }
    return runs
  }

  /** One window at `rate`: the payers funded (automining), then arrivals under 2 s blocks until every submission settles. */
  const window = async (rig: Rig, rate: number): Promise<RateRun> => {
    const payers = await fundPayers(anvil.rpcUrl, deployment, rate * WINDOW_SEC)
    await testClient.setAutomine(false)
    await testClient.setIntervalMining({ interval: BLOCK_SEC })
    try {
      rig.resetTiming()
      const arrivals: Promise<Arrival>[] = []
      const started = Date.now()
      for (const [index, payer] of payers.entries()) {
        await sleep(Math.max(0, started + (index * 1000) / rate - Date.now()))
        const arrival = arrive(rig, payer)
        // Awaited with the others below: a failed arrival fails the window there, not the process now.
        arrival.catch(() => {})
        arrivals.push(arrival)
      }
      const settled = await Promise.all(arrivals)
      const ids = new Set(settled.map((arrival) => arrival.id))
      // Every submission of the window settles (or the bench gives up on it after a minute).
      const deadline = Date.now() + 60_000
      while ((await rig.store.active('local')).some((submission) => ids.has(submission.id)) && Date.now() < deadline) await sleep(250)
      const done = await Promise.all(settled.map(async (arrival) => ({ arrival, stored: (await rig.store.get(arrival.id))! })))
      const sent = done.filter(({ stored }) => stored.transaction)
      const blocks = done.map(({ arrival, stored }) => (stored.blockNumber ? Number(BigInt(stored.blockNumber) - arrival.arrivalBlock) : Number.POSITIVE_INFINITY)).sort((a, b) => a - b)
      const withinTwoBlocks = blocks.filter((count) => count <= 2).length
      const toDone = done.filter(({ stored }) => stored.stage === 'done').map(({ arrival, stored }) => stored.updatedAt - arrival.arrivedAt).sort((a, b) => a - b)
      const onLanes: Record<Address, number> = {}
      for (const { stored } of sent) onLanes[stored.transaction!.from!] = (onLanes[stored.transaction!.from!] ?? 0) + 1
      return {
        rate,
        submissions: done.length,
        withinTwoBlocks,
        sustained: withinTwoBlocks === done.length,
        blocksToInclusion: { p50: percentile(blocks, 50), p99: percentile(blocks, 99), max: blocks.at(-1)! },
        ms: {
          quote: mean(settled.map((arrival) => arrival.quoteMs)),
          submit: mean(settled.map((arrival) => arrival.submitMs)),
          toSent: mean(sent.map(({ arrival, stored }) => stored.transaction!.firstSentAt - arrival.arrivedAt)),
          sentToDone: mean(done.filter(({ stored }) => stored.stage === 'done').map(({ stored }) => stored.updatedAt - stored.transaction!.firstSentAt)),
          arrivalToDone: { p50: Math.round(percentile(toDone, 50)), p99: Math.round(percentile(toDone, 99)) },
        },
        gasUsed: done.flatMap(({ stored }) => (stored.gasUsed ? [Number(stored.gasUsed)] : [])),
        onLanes,
        breakdown: await rig.breakdown(sent.length),
      }
    } finally {
      await testClient.setIntervalMining({ interval: 0 })
      await testClient.setAutomine(true)
    }
  }

  /** One arrival: its gift quoted, its payment signed, submitted. */
  const arrive = async (rig: Rig, payer: Payer): Promise<Arrival> => {
    const call = await giftCall(deployment, payer, friend)
    const arrivedAt = Date.now()
    const arrivalBlock = await client.getBlockNumber({ cacheTime: 0 })
    const quoted = performance.now()
    const quote = await quoteCall(rig.context, { call, token: 'USDC', payment: 'authorization' })
    const quoteMs = performance.now() - quoted
    const token = { address: deployment.usdc, name: 'USD Coin', version: '2', chainId: deployment.chainId }
    const fee = await signTransfer(payer.key, token, getAddress(rig.context.network.config.payee), BigInt(quote.amountBaseUnits))
    const submitted = performance.now()
    const view = await submitCall(rig.context, { call, payment: { token: deployment.usdc, authorization: fee.message, signature: fee.signature } as SubmitRequest['payment'] })
    return { id: view.id, arrivedAt, arrivalBlock, quoteMs, submitMs: performance.now() - submitted }
  }

  // 1. Throughput by lane count.
  const throughput: { lanes: number; runs: RateRun[] }[] = []
  if (PARTS.has('throughput')) for (const lanes of LANE_COUNTS) throughput.push({ lanes, runs: await rising(`${lanes} lane(s)`, { lanes, store: sqlite }, RATES) })

  // 2. One lane stuck, against none: the same rate, the same 4 lanes.
  const stuckLane = operators[0]!
  const stuckRuns: { idle: RateRun; stuck: RateRun }[] = []
  if (PARTS.has('stuck')) {
    const [idle] = await rising('4 lanes, none stuck', { lanes: 4, store: sqlite }, [STUCK_RATE])
    const stuckRig = await startRig(deployment, { lanes: 4, store: sqlite, blackHole: stuckLane })
    try {
      // A first submission goes on the first lane (ties go to it), which the node never includes:
      // past runner.stuckAfterMs the runner knows the lane stuck.
      const [canaryPayer] = await fundPayers(anvil.rpcUrl, deployment, 1)
      await arrive(stuckRig, canaryPayer!)
      const known = Date.now() + 30_000
      while (!stuckRig.runners[0]!.lanes()[0]!.stuck && Date.now() < known) await sleep(100)
      if (!stuckRig.runners[0]!.lanes()[0]!.stuck) throw new Error('the black-holed lane was never found stuck')
      const stuck = await window(stuckRig, STUCK_RATE)
      stuckRuns.push({ idle: idle!, stuck })
      log(`  4 lanes, the first stuck, ${STUCK_RATE}/s: ${stuck.withinTwoBlocks} of ${stuck.submissions} within 2 blocks; arrival → done p99 ${stuck.ms.arrivalToDone.p99} ms`)
    } finally {
      await stuckRig.close()
    }
  }

  // 3. One replica against two, on PostgreSQL.
  const pgUrl = process.env.BRUNO_TEST_PG_URL
  const replicas: { replicas: number; runs: RateRun[] }[] = []
  if (PARTS.has('replicas') && pgUrl) {
    for (const count of [1, 2]) {
      const database = await freshDatabase(pgUrl)
      process.env.BRUNO_BENCH_PG_URL = database
      replicas.push({ replicas: count, runs: await rising(`16 lanes, ${count} replica(s)`, { lanes: 16, replicas: count, store: { kind: 'postgres', url: { env: 'BRUNO_BENCH_PG_URL' } } }, REPLICA_RATES) })
    }
  } else if (PARTS.has('replicas')) log('  replicas: skipped (no PostgreSQL: run through .ci/with-postgres, as npm run bench:lanes does)')

  const { gasLimit } = await client.getBlock({ blockTag: 'latest' })
  const capacity = (runs: readonly RateRun[]) => {
    const gas = runs.flatMap((run) => run.gasUsed).sort((a, b) => a - b)
    const relayGas = gas[Math.floor(gas.length / 2)] ?? 0
    return { relayGas, perSec: Number(gasLimit) / relayGas / BLOCK_SEC }
  }
  const best = (runs: readonly RateRun[]) => runs.filter((run) => run.sustained).at(-1)

  log(`\nBruno lanes bench${smoke ? ' (smoke)' : ''}: ${host.cpu}, ${host.cores} cores, Node ${host.node}, commit ${host.commit}; blocks every ${BLOCK_SEC} s, ${WINDOW_SEC} s per rate`)
  if (throughput.length > 0) {
    log('\n| lanes | highest rate sustained (arrivals/s) | one relay\'s gas | block capacity (relays/s) | sustained ÷ capacity |')
    log('|---:|---:|---:|---:|---:|')
    for (const { lanes, runs } of throughput) {
      const { relayGas, perSec } = capacity(runs)
      const rate = best(runs)?.rate ?? 0
      log(`| ${lanes} | ${rate}${rate === RATES.at(-1) ? ' (the highest tried)' : ''} | ${relayGas} | ${perSec.toFixed(1)} | ${((100 * rate) / perSec).toFixed(1)} % |`)
    }
    log('\n| lanes | rate | submissions | within 2 blocks | blocks to inclusion p50 / p99 / max | quote ms | submit ms | arrival → sent ms | sent → done ms | arrival → done p50 / p99 ms |')
    log('|---:|---:|---:|---:|---|---:|---:|---:|---:|---|')
    for (const { lanes, runs } of throughput) for (const run of runs) log(`| ${lanes} | ${rateRow(run)}`)

    log('\nWhere the runner\'s time went per submission sent, at each lane count\'s highest sustained rate (ms busy, summed over concurrent work; calls):')
    const bests = throughput.flatMap(({ lanes, runs }) => (best(runs) ? [{ lanes, run: best(runs)! }] : []))
    const methods = [...new Set(bests.flatMap(({ run }) => Object.keys(run.breakdown.rpc)))].sort()
    const storeCalls = [...new Set(bests.flatMap(({ run }) => Object.keys(run.breakdown.store)))].sort()
    log(`| part | ${bests.map(({ lanes, run }) => `${lanes} lane(s) at ${run.rate}/s`).join(' | ')} |`)
    log(`|---|${bests.map(() => '---:').join('|')}|`)
    const cell = (entry: { ms: number; calls: number } | undefined) => (entry ? `${entry.ms.toFixed(2)} (${entry.calls.toFixed(2)})` : '—')
    for (const method of methods) log(`| node: ${method} | ${bests.map(({ run }) => cell(run.breakdown.rpc[method])).join(' | ')} |`)
    for (const call of storeCalls) log(`| store: ${call} | ${bests.map(({ run }) => cell(run.breakdown.store[call])).join(' | ')} |`)
    log(`| signing | ${bests.map(({ run }) => run.breakdown.signMs.toFixed(2)).join(' | ')} |`)
  }

  for (const { idle, stuck } of stuckRuns) {
    log(`\nA stuck lane (4 lanes, ${STUCK_RATE}/s; the first lane's transactions taken by the node and never included):`)
    log('| relay | submissions | within 2 blocks | sent on the first lane | arrival → done p50 / p99 ms |')
    log('|---|---:|---:|---:|---|')
    const stuckRow = (label: string, run: RateRun) =>
      log(`| ${label} | ${run.submissions} | ${run.withinTwoBlocks} | ${run.onLanes[stuckLane] ?? 0} | ${run.ms.arrivalToDone.p50} / ${run.ms.arrivalToDone.p99} |`)
    stuckRow('none stuck', idle)
    stuckRow('first lane stuck', stuck)
    log(`p99 with a lane stuck ÷ p99 with none: ${(stuck.ms.arrivalToDone.p99 / idle.ms.arrivalToDone.p99).toFixed(2)}`)
  }

  if (replicas.length > 0) {
    log('\nReplicas on one PostgreSQL, 16 lanes divided between them:')
    log('| replicas | highest rate sustained (arrivals/s) | sustained ÷ capacity |')
    log('|---:|---:|---:|')
    for (const { replicas: count, runs } of replicas) {
      const rate = best(runs)?.rate ?? 0
      log(`| ${count} | ${rate} | ${((100 * rate) / capacity(runs).perSec).toFixed(1)} % |`)
    }
    log('| replicas | rate | submissions | within 2 blocks | blocks to inclusion p50 / p99 / max | quote ms | submit ms | arrival → sent ms | sent → done ms | arrival → done p50 / p99 ms |')
    log('|---:|---:|---:|---:|---|---:|---:|---:|---:|---|')
    for (const { replicas: count, runs } of replicas) for (const run of runs) log(`| ${count} | ${rateRow(run)}`)
  }
  mkdirSync(new URL('./out/', import.meta.url), { recursive: true })
  writeFileSync(new URL('./out/lanes.json', import.meta.url), `${JSON.stringify({ host, blockSec: BLOCK_SEC, windowSec: WINDOW_SEC, throughput, stuck: stuckRuns.map((runs) => ({ ...runs, stuckLane })), replicas }, null, 2)}\n`)
} finally {
  await anvil.stop()
}

function rateRow(run: RateRun): string {
  return `${run.rate} | ${run.submissions} | ${run.withinTwoBlocks} | ${run.blocksToInclusion.p50} / ${run.blocksToInclusion.p99} / ${run.blocksToInclusion.max} | ${run.ms.quote} | ${run.ms.submit} | ${run.ms.toSent} | ${run.ms.sentToDone} | ${run.ms.arrivalToDone.p50} / ${run.ms.arrivalToDone.p99} |`
}

/**
 * The relay with the first `lanes` runner keys: one store and runner loop per replica (each replica
 * its own store connection and lane ownership, as separate processes have), started, and the callers'
 * context on the first. The runners' node requests are timed per method, their store calls per
 * method, and their signatures.
 */
async function startRig(deployment: DevnetDeployment, { lanes, store, replicas = 1, blackHole }: RigOptions): Promise<Rig> {
  const env: NodeJS.ProcessEnv = { ...process.env }
  const limited = { ...deployment, runner: { ...deployment.runner, lanes: deployment.runner.lanes.slice(0, lanes - 1) } }
  const config = { ...devnetConfig(limited, env, { port: 0, pollMs: 100, stuckAfterMs: STUCK_AFTER_MS }), store }
  const keys = [deployment.runner.operator, ...limited.runner.lanes].map(({ privateKey }) => privateKeyToAccount(privateKey))
  const operators = keys.map((key) => getAddress(key.address))
  const metrics = new Metrics()
  const storeTime = new Map<string, { ms: number; calls: number }>()
  let signMs = 0
  const timedStore = (inner: SubmissionStore): SubmissionStore =>
    new Proxy(inner, {
      get(target, property) {
        const value = Reflect.get(target, property) as unknown
        if (typeof value !== 'function') return value
        return async (...args: unknown[]) => {
          const started = performance.now()
          try {
            return await (value as (...args: unknown[]) => Promise<unknown>).apply(target, args)
          } finally {
            const entry = storeTime.get(String(property)) ?? { ms: 0, calls: 0 }
            storeTime.set(String(property), { ms: entry.ms + performance.now() - started, calls: entry.calls + 1 })
          }
        }
      },
    })
  const timedSigner = (account: LocalAccount): LocalAccount => ({
    ...account,
    async signTransaction(transaction, options) {
      const started = performance.now()
      try {
        return await account.signTransaction(transaction, options)
      } finally {
        signMs += performance.now() - started
      }
    },
  })
  // Each store observed as `npm start` wraps it (a stage change reads the submission first).
  const storages = Array.from({ length: replicas }, () => {
    const opened = openStore(config.store, env)
    return { ...opened, store: observedStore(opened.store, silent) }
  })
  const callers = new Networks(config, env).get('local')
  const context: RelayContext = {
    network: callers,
    store: storages[0]!.store,
    operator: operators[0]!,
    spareOperators: operators.slice(1),
    laneGas: operators.length > 1 ? RUNNER_OPERATOR_SET_GAS : 0n,
    delegates: [],
    wake: () => void runners[0]?.wake(),
  }
  const runners = storages.map((storage) => {
    const network = new Networks(config, env, { metrics }).get('local')
    const sendRawTransaction: typeof network.sendRawTransaction = async (raw) =>
      blackHole && getAddress(await recoverTransactionAddress({ serializedTransaction: raw as never })) === blackHole ? keccak256(raw) : network.sendRawTransaction(raw)
    return new RunnerLoop(
      { ...context, store: timedStore(storage.store), network: { ...network, client: network.runnerClient, sendRawTransaction } },
      keys.map((account) => ({ account: timedSigner(account), ownership: storage.ownership(network.config, { operator: getAddress(account.address), wake: () => {} }, silent) })),
      silent,
    )
  })
  for (const runner of runners) runner.start()
  // Replicas divide the lanes once each counts the other alive: the bench starts when every lane is owned once.
  const divided = Date.now() + 30_000
  const owned = () => runners.flatMap((runner) => runner.lanes().filter((lane) => lane.owned).map((lane) => lane.operator))
  while ((owned().length !== operators.length || new Set(owned()).size !== operators.length) && Date.now() < divided) await sleep(100)
  if (new Set(owned()).size !== operators.length) throw new Error(`the replicas own ${new Set(owned()).size} of ${operators.length} lanes`)
  return {
    context,
    store: storages[0]!.store,
    runners,
    resetTiming() {
      metrics.rpcDuration.reset()
      storeTime.clear()
      signMs = 0
    },
    async breakdown(sent) {
      const per = sent || 1
      const rpc: Record<string, { ms: number; calls: number }> = {}
      for (const { metricName, labels, value } of (await metrics.rpcDuration.get()).values) {
        const method = String(labels.method)
        const entry = rpc[method] ?? { ms: 0, calls: 0 }
        if (metricName?.endsWith('_sum')) entry.ms = (value * 1000) / per
        if (metricName?.endsWith('_count')) entry.calls = value / per
        rpc[method] = entry
      }
      const storeCalls = Object.fromEntries([...storeTime].map(([name, { ms, calls }]) => [name, { ms: ms / per, calls: calls / per }]))
      return { sent, rpc, store: storeCalls, signMs: signMs / per }
    },
    async close() {
      await Promise.all(runners.map((runner) => runner.stop()))
      await Promise.all(storages.map(({ store: each }) => each.close()))
    },
  }
}

/** `count` fresh accounts, each holding 100 USDC: the mints signed with the deployer's nonces in turn and sent at once. */
async function fundPayers(rpcUrl: string, deployment: DevnetDeployment, count: number): Promise<Payer[]> {
  const payers = Array.from({ length: count }, () => {
    const key = generatePrivateKey()
    return { key, address: privateKeyToAccount(key).address }
  })
  const transport = http(rpcUrl)
  const client = createPublicClient({ transport, pollingInterval: 50 })
  const minter = privateKeyToAccount(deployment.deployer.privateKey)
  const wallet = createWalletClient({ account: minter, transport })
  const first = await client.getTransactionCount({ address: minter.address, blockTag: 'pending' })
  const fees = await client.estimateFeesPerGas()
  const mint = parseAbi(['function mint(address _to, uint256 _amount) returns (bool)'])
  const hashes: Hex[] = []
  for (const [index, payer] of payers.entries()) {
    const raw = await minter.signTransaction({
      chainId: deployment.chainId,
      to: deployment.usdc,
      data: encodeFunctionData({ abi: mint, functionName: 'mint', args: [payer.address, 100_000_000n] }),
      gas: 120_000n,
      nonce: first + index,
      ...fees,
      type: 'eip1559',
    })
    hashes.push(await wallet.sendRawTransaction({ serializedTransaction: raw }))
  }
  // The mints are one sender's nonces in turn: the last one mined, all are.
  await client.waitForTransactionReceipt({ hash: hashes.at(-1)! })
  return payers
}

/** A fresh database on the cluster at `admin`, for one replicas run; its URL. */
async function freshDatabase(admin: string): Promise<string> {
  const { default: pg } = await import('pg')
  const name = `bruno_bench_${Date.now()}`
  const connection = new pg.Client({ connectionString: admin })
  await connection.connect()
  try {
    await connection.query(`CREATE DATABASE ${name}`)
  } finally {
    await connection.end()
  }
  const url = new URL(admin)
  url.pathname = `/${name}`
  return url.toString()
}
