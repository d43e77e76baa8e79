import { mkdirSync, writeFileSync } from 'node:fs'
import pino from 'pino'
import { createPublicClient, createTestClient, getAddress, http, type Address } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { devnetConfig } from '../config/devnet.ts'
import { Networks } from '../core/chain/networks.ts'
import { startAnvil } from '../core/devnet/anvil.ts'
import { deployDevnet, type DevnetDeployment } from '../core/devnet/deploy.ts'
import { mintUsdc } from '../core/devnet/fund.ts'
import type { RelayContext } from '../core/relay/context.ts'
import { localOwnership, runnerKeyName } from '../core/relay/ownership.ts'
import { quoteCall } from '../core/relay/quote.ts'
import { RunnerLoop } from '../core/relay/runner.ts'
import { RUNNER_OPERATOR_SET_GAS } from '../core/relay/runnerCall.ts'
import type { SubmitRequest } from '../core/relay/schemas.ts'
import { SqliteSubmissionStore } from '../core/relay/sqliteStore.ts'
import { submitCall } from '../core/relay/submit.ts'
import { signTransfer } from '../test/fixtures/signedTransfer.ts'
import { machine } from './machine.ts'
import { giftCall, percentile, type Payer } from './relay.ts'

/**
 * `npm run bench:lanes [-- --smoke]`: issue 33's throughput figures — the relay on a devnet mining a
 * block every 2 s, with 1, 4 and 16 runner lanes. For each lane count, arrivals come at rising rates
 * (each for `WINDOW_SEC`), each a fresh USDC-only account's signed gift paid by signed transfer
 * (flow 2): quote, sign, submit, in-process (`quoteCall`, `submitCall`: no HTTP), with the runner
 * loop running beside them as `npm start` runs it. A rate is sustained when every submission of
 * its window is included within 2 blocks of the block it arrived in. The table gives, per lane
 * count, the highest rate sustained, and that rate as a fraction of the block's capacity (block gas
 * limit ÷ one relay's gas ÷ 2 s: the physical limit); per rate, the latency and where the time went
 * (the quote's and the submit's own time, the wait for a send, the wait for inclusion).
 */

const smoke = process.argv.includes('--smoke')
const LANE_COUNTS = smoke ? [1, 4] : [1, 4, 16]
const RATES = smoke ? [2] : [8, 16, 32, 48, 64]
const WINDOW_SEC = smoke ? 4 : 8
const BLOCK_SEC = 2
const log = (line: string) => process.stdout.write(`${line}\n`)
const silent = pino({ level: 'silent' })
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

interface Arrival {
  readonly id: string
  readonly arrivedAt: number
  readonly arrivalBlock: bigint
  readonly quoteMs: number
  readonly submitMs: number
}

interface RateRun {
  readonly rate: number
  readonly submissions: number
  readonly withinTwoBlocks: number
  readonly sustained: boolean
  readonly blocksToInclusion: { readonly p50: number; readonly p99: number; readonly max: number }
  readonly ms: { readonly quote: number; readonly submit: number; readonly toSent: number; readonly sentToDone: number; readonly arrivalToDone: { readonly p50: number; readonly p99: number } }
}

const anvil = await startAnvil()
try {
  const setupStarted = performance.now()
  const deployment = await deployDevnet(anvil.rpcUrl, { lanes: Math.max(...LANE_COUNTS) - 1 })
  const transport = http(anvil.rpcUrl)
  const client = createPublicClient({ transport, pollingInterval: 100 })
  const perLaneCount = RATES.reduce((sum, rate) => sum + rate * WINDOW_SEC, 0)
  // Each lane count's accounts are funded before its runs, while the chain automines.
  const fundPayers = async () => {
    const payers: Payer[] = Array.from({ length: perLaneCount }, () => {
      const key = generatePrivateKey()
      return { key, address: privateKeyToAccount(key).address }
    })
    for (const payer of payers) await mintUsdc(anvil.rpcUrl, deployment, payer.address, 100_000_000n)
    return payers
  }
  const friend = privateKeyToAccount(generatePrivateKey()).address
  log(`  devnet with ${deployment.runner.lanes.length + 1} lanes in ${Math.round((performance.now() - setupStarted) / 1000)} s; ${perLaneCount} accounts are funded before each lane count`)
  const host = machine()
  const results: { lanes: number; runs: RateRun[]; relayGas: number; capacityPerSec: number }[] = []
  for (const lanes of LANE_COUNTS) {
    const runs = await runLanes(deployment, lanes, await fundPayers(), friend)
    // The physical limit: the block's gas limit over one relay's gas (the median receipt of the last window), per second.
    const { gasLimit } = await client.getBlock({ blockTag: 'latest' })
    const relayGas = runs.relayGas
    const capacityPerSec = Number(gasLimit) / relayGas / BLOCK_SEC
    results.push({ lanes, runs: runs.runs, relayGas, capacityPerSec })
  }

  log(`\nBruno lanes bench${smoke ? ' (smoke)' : ''}: ${host.cpu}, ${host.cores} cores, Node ${host.node}, commit ${host.commit}; blocks every ${BLOCK_SEC} s, ${WINDOW_SEC} s per rate`)
  log('| lanes | rate (arrivals/s) | submissions | within 2 blocks | blocks to inclusion p50 / p99 / max | quote ms | submit ms | arrival → sent ms | sent → done ms | arrival → done p50 / p99 ms |')
  log('|---:|---:|---:|---:|---|---:|---:|---:|---:|---|')
  for (const { lanes, runs } of results) {
    for (const run of runs) {
      log(
        `| ${lanes} | ${run.rate} | ${run.submissions} | ${run.withinTwoBlocks} | ${run.blocksToInclusion.p50} / ${run.blocksToInclusion.p99} / ${run.blocksToInclusion.max} | ${run.ms.quote} | ${run.ms.submit} | ${run.ms.toSent} | ${run.ms.sentToDone} | ${run.ms.arrivalToDone.p50} / ${run.ms.arrivalToDone.p99} |`,
      )
    }
  }
  log('\n| lanes | highest rate sustained (arrivals/s) | one relay\'s gas | block capacity (relays/s) | sustained ÷ capacity |')
  log('|---:|---:|---:|---:|---:|')
  for (const { lanes, runs, relayGas, capacityPerSec } of results) {
    const best = runs.filter((run) => run.sustained).at(-1)?.rate ?? 0
    log(`| ${lanes} | ${best} | ${relayGas} | ${capacityPerSec.toFixed(1)} | ${((100 * best) / capacityPerSec).toFixed(1)} % |`)
  }
  mkdirSync(new URL('./out/', import.meta.url), { recursive: true })
  writeFileSync(new URL('./out/lanes.json', import.meta.url), `${JSON.stringify({ host, blockSec: BLOCK_SEC, windowSec: WINDOW_SEC, results }, null, 2)}\n`)
} finally {
  await anvil.stop()
}

/** One lane count: the runner started with the first `lanes` keys, the rates in turn until one is not sustained. */
async function runLanes(deployment: DevnetDeployment, lanes: number, payers: Payer[], friend: Address): Promise<{ runs: RateRun[]; relayGas: number }> {
  const env: NodeJS.ProcessEnv = {}
  const limited = { ...deployment, runner: { ...deployment.runner, lanes: deployment.runner.lanes.slice(0, lanes - 1) } }
  const config = devnetConfig(limited, env, { port: 0, pollMs: 100 })
  const network = new Networks(config, env).get('local')
  const store = new SqliteSubmissionStore(':memory:')
  const keys = [deployment.runner.operator, ...limited.runner.lanes].map(({ privateKey }) => privateKeyToAccount(privateKey))
  const context: RelayContext = {
    network,
    store,
    operator: getAddress(keys[0]!.address),
    spareOperators: keys.slice(1).map((key) => getAddress(key.address)),
    laneGas: keys.length > 1 ? RUNNER_OPERATOR_SET_GAS : 0n,
    delegates: [],
    wake: () => void runner.wake(),
  }
  const runnerContext: RelayContext = { ...context, network: { ...network, client: network.runnerClient } }
  const runner = new RunnerLoop(runnerContext, keys.map((account) => ({ account, ownership: localOwnership(store, runnerKeyName(network.config.chainId, account.address)) })), silent)
  const client = createPublicClient({ transport: http(deployment.rpcUrl), pollingInterval: 100 })
  const testClient = createTestClient({ mode: 'anvil', transport: http(deployment.rpcUrl) })
  const token = { address: deployment.usdc, name: 'USD Coin', version: '2', chainId: deployment.chainId }
  const payee = getAddress(config.networks[0]!.payee)
  runner.start()
  await testClient.setAutomine(false)
  await testClient.setIntervalMining({ interval: BLOCK_SEC })
  const runs: RateRun[] = []
  const gasUsed: number[] = []
  try {
    for (const rate of RATES) {
      const arrivals: Promise<Arrival>[] = []
      const started = Date.now()
      for (let index = 0; index < rate * WINDOW_SEC; index++) {
        const due = started + (index * 1000) / rate
        await sleep(Math.max(0, due - Date.now()))
        const payer = payers.shift()!
        arrivals.push(
          (async () => {
            const call = await giftCall(deployment, payer, friend)
            const arrivedAt = Date.now()
            const arrivalBlock = await client.getBlockNumber({ cacheTime: 0 })
            const quoted = performance.now()
            const quote = await quoteCall(context, { call, token: 'USDC', payment: 'authorization' })
            const quoteMs = performance.now() - quoted
            const fee = await signTransfer(payer.key, token, payee, BigInt(quote.amountBaseUnits))
            const submitted = performance.now()
            const view = await submitCall(context, { call, payment: { token: deployment.usdc, authorization: fee.message, signature: fee.signature } as SubmitRequest['payment'] })
            return { id: view.id, arrivedAt, arrivalBlock, quoteMs, submitMs: performance.now() - submitted }
          })(),
        )
      }
      const settled = await Promise.all(arrivals)
      // Every submission settles (or the bench gives up on it after a minute).
      const deadline = Date.now() + 60_000
      while ((await store.active('local')).length > 0 && Date.now() < deadline) await sleep(250)
      const done = await Promise.all(settled.map(async (arrival) => ({ arrival, stored: (await store.get(arrival.id))! })))
      const blocks = done.map(({ arrival, stored }) => (stored.blockNumber ? Number(BigInt(stored.blockNumber) - arrival.arrivalBlock) : Number.POSITIVE_INFINITY)).sort((a, b) => a - b)
      const withinTwoBlocks = blocks.filter((count) => count <= 2).length
      for (const { stored } of done) if (stored.gasUsed) gasUsed.push(Number(stored.gasUsed))
      const mean = (values: number[]) => Math.round(values.reduce((sum, value) => sum + value, 0) / Math.max(1, values.length))
      const toDone = done.filter(({ stored }) => stored.stage === 'done').map(({ arrival, stored }) => stored.updatedAt - arrival.arrivedAt).sort((a, b) => a - b)
      const run: RateRun = {
        rate,
        submissions: done.length,
        withinTwoBlocks,
        sustained: withinTwoBlocks === done.length,
        blocksToInclusion: { p50: percentile(blocks, 50), p99: percentile(blocks, 99), max: blocks.at(-1)! },
        ms: {
          quote: mean(settled.map((arrival) => arrival.quoteMs)),
          submit: mean(settled.map((arrival) => arrival.submitMs)),
          toSent: mean(done.filter(({ stored }) => stored.transaction).map(({ arrival, stored }) => stored.transaction!.firstSentAt - arrival.arrivedAt)),
          sentToDone: mean(done.filter(({ stored }) => stored.stage === 'done').map(({ stored }) => stored.updatedAt - stored.transaction!.firstSentAt)),
          arrivalToDone: { p50: Math.round(percentile(toDone, 50)), p99: Math.round(percentile(toDone, 99)) },
        },
      }
      runs.push(run)
      log(`  ${lanes} lane(s), ${rate}/s: ${withinTwoBlocks} of ${done.length} within 2 blocks (p99 ${run.blocksToInclusion.p99} blocks); quote ${run.ms.quote} ms, submit ${run.ms.submit} ms`)
      if (!run.sustained) break
    }
  } finally {
    await runner.stop()
    await testClient.setIntervalMining({ interval: 0 })
    await testClient.setAutomine(true)
    await store.close()
  }
  const sorted = gasUsed.sort((a, b) => a - b)
  return { runs, relayGas: sorted[Math.floor(sorted.length / 2)] ?? 0 }
}
