import { randomUUID } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import solc from 'solc'
import { createTestClient, encodeFunctionData, getAddress, http, type Abi, type Address, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { compilerSettings } from '../contracts/build.ts'
import { SqliteSubmissionStore } from '../core/store/sqliteStore.ts'
import type { Submission } from '../core/store/store.ts'
import { randomAuthorizationNonce, transferWithAuthorizationTypedData } from '../plugins/3009/typedData.ts'
import type { ProcessStats } from './child.ts'
import { startServerChild, type ServerChild } from './processes.ts'
import type { RoundTrip, WatchAction } from './proxy.ts'
import { giftCall, LeanMcp, MB, percentile, type Payer, type RelayDevnet } from './relay.ts'

/**
 * The soak (issue 13, "A relay no client can stop"): a legitimate workload with held submissions
 * and poison pills among it, against the same legitimate workload on an idle relay, in one Bruno.
 *
 * - legitimate: flow 2's signed gift (a USDC `transferWithAuthorization` to a friend), paid by a
 *   signed EIP-3009 fee: quote → sign → submit, followed with `status` until done;
 * - held: `SoakGate.pass(key)`, which succeeds at submit and reverts ("SoakGate: closed") at every
 *   re-check after it, until the runner gives up on it (`relay.failingHoldSec`, 120 s);
 * - poison pills, three kinds in turn: `SoakGate.bomb(key, 2.75 MB)`, which then reverts with 2.75 MB
 *   (the node expands that much memory at every re-check); and `SoakGate.pass(key)` whose every later
 *   simulation the node cannot answer: the proxy answers geth's "execution aborted (timeout = 5s)"
 *   error, or a result that is not a quantity.
 * A bad call changes while submit checks it: the counting proxy closes its key (or starts answering
 * for it) right after submit's last simulation of it, before the relay has accepted it (bench/proxy.ts,
 * `watch`). Flipped by the bench after `submit` answered, a call would race the runner, which looks
 * at a new submission within milliseconds and would send it while it still passed.
 *
 * Every submission carries a signed fee of its own (valid two days) and the deadline the config
 * allows at most (`relay.submissionTtlSec`, raised to the schema's limit, 86,400 s). The accounts
 * each make `submissions / accounts` submissions, their kinds shuffled, in rounds of one per account
 * (the same shuffled order each round), one arrival every `arrivalMs`; the baseline makes the
 * legitimate ones alone at the same moments, on the same Bruno, before any bad one exists.
 */
export interface SoakOptions {
  /** Paying accounts (200): each submits `submissions / accounts` times. */
  readonly accounts: number
  /** Submissions in all (1,000), `held` and `poison` of them bad. */
  readonly submissions: number
  readonly held: number
  readonly poison: number
  /** ms between two arrivals. */
  readonly arrivalMs: number
  readonly blockTimeSec: number
  /** How long the relay is left idle, holding the bad submissions, while its calls to the node are counted. */
  readonly idleSec: number
  /** Legitimate submissions before anything is measured (JIT, SQLite, the runner's nonce). */
  readonly warmup: number
}

type Kind = 'legit' | 'held' | 'bomb' | 'nodeError' | 'garbage'
const BAD_KINDS = ['held', 'bomb', 'nodeError', 'garbage'] as const
type BadKind = (typeof BAD_KINDS)[number]

/** The latencies of one workload's legitimate submissions. */
export interface LegitRun {
  readonly submissions: number
  readonly done: number
  readonly failed: number
  /** `updatedAt − createdAt` of each done submission, as the relay's store has them. */
  readonly submitToDoneMs: { readonly p50: number; readonly p99: number; readonly max: number }
  /** From `submit`'s answer to the `status` poll (every 200 ms) that saw it done. */
  readonly observedMs: { readonly p50: number; readonly p99: number }
  /** Round trips to the node during the run (quotes, submits, the runner), in all and carrying a bad call. */
  readonly roundTrips: number
  readonly badRoundTrips: number
  readonly seconds: number
  /** Bruno's CPU time over the run (user + system, all its threads), in seconds. */
  readonly brunoCpuSec: number
}

export interface SoakResults {
  readonly accounts: number
  readonly submissions: number
  readonly legit: number
  readonly bad: Record<BadKind, number>
  readonly arrivalPerSec: number
  readonly blockTimeSec: number
  readonly config: { readonly submissionTtlSec: number; readonly clientMaxActive: number; readonly accountMaxActive: string }
  readonly baseline: LegitRun
  readonly soak: LegitRun
  /** soak p99 ÷ baseline p99 (submit → done). */
  readonly p99Ratio: number
  /**
   * Whether the baseline kept up (p99 within 3 blocks): on a machine busy with other work the idle
   * relay itself falls behind at this arrival rate, and the ratio then compares two backlogs.
   */
  readonly baselineKeptUp: boolean
  /** The bad submissions at the end: how many still waiting (held), sent or failed, and their reasons. */
  readonly badEnd: { readonly waiting: number; readonly sent: number; readonly failed: number; readonly reasons: Record<string, number> }
  readonly idle: {
    readonly seconds: number
    /** HTTP requests to the node (a JSON-RPC batch is one), and the JSON-RPC calls in them. */
    readonly roundTrips: number
    readonly calls: number
    readonly perSec: number
    readonly callsPerSec: number
    /** Calls per second in each `SERIES_SEC` of the window, in order. */
    readonly callsPerSecSeries: number[]
    /** Bruno's CPU time over the window, in seconds. */
    readonly brunoCpuSec: number
    readonly methods: Record<string, number>
    /** How long before the window the bad ones were accepted (their backoffs were still growing). */
    readonly ageSec: { readonly min: number; readonly max: number }
    /** Re-checks seen in the window per kind (the calls carrying a bad call's key, grouped per key), and those calls: its simulations. */
    readonly looks: Record<BadKind, { readonly looks: number; readonly calls: number }>
    /** Calls carrying no bad call's key: the reads beside the simulations (block, fees, price, chain id). */
    readonly untaggedCalls: number
    readonly roundTripsPerLook: number
    readonly callsPerLook: number
    /** Re-checks the runner's backoff (pollMs × 2^holds, up to `relay.failingHoldSec`) schedules in the window, counted from each acceptance: fewer than `looks` when the runner is behind. */
    readonly scheduledLooks: number
    /** Once every bad one has failed (`relay.failingHoldSec` after the last was accepted, plus a slice): the calls per second for the rest of the window, if 10 s of it are left. */
    readonly afterHoldsEnded?: { readonly fromSec: number; readonly seconds: number; readonly calls: number; readonly callsPerSec: number }
  }
  readonly memory: {
    /** After a full GC: after the warm-up, after the baseline, after the soak's legitimate ones were done, after the idle window. */
    readonly rssMb: { readonly before: number; readonly afterBaseline: number; readonly afterSoak: number; readonly afterIdle: number }
    readonly heapMb: { readonly before: number; readonly afterBaseline: number; readonly afterSoak: number; readonly afterIdle: number }
    /** Submissions the store holds at the end, and the size of an SQLite file holding as many (done ones like the soak's). */
    readonly stored: number
    readonly storeFileMb?: number
  }
  readonly seconds: number
}

/** The gate's address on the devnet (its code set with anvil_setCode). */
const GATE = getAddress('0x5eed000000000000000000000000000000005eed')
/** Every bad call's key starts with this; then the kind's byte, then the index. */
const KEY_PREFIX = '5eed5eed5eed5eed'
const BOMB_BYTES = 2_750_000n
/** core/runner/holds.ts: a submission whose simulation keeps failing is looked at again after pollMs × 2^holds, and fails after `relay.failingHoldSec` (default). */
const FAILING_HOLD_SEC = 120
/** bench/servers/bruno.ts: the runner's pollMs. */
const POLL_MS = 200

/** How many looks the runner's backoff schedules within [from, to] (ms after the acceptance): the first at 0, then after each hold's wait. */
function scheduledLooks(from: number, to: number): number {
  let looks = 0
  const endsAt = Math.min(to, FAILING_HOLD_SEC * 1000)
  for (let at = 0, holds = 0; at <= endsAt; ) {
    if (at >= from) looks++
    holds++
    at += at === FAILING_HOLD_SEC * 1000 ? Infinity : Math.min(POLL_MS * 2 ** holds, FAILING_HOLD_SEC * 1000 - at)
  }
  return looks
}
/** A fee valid this long: past any deadline the relay allows, so that only the call holds a bad one. */
const FEE_VALID_SEC = 2 * 86_400
const SUBMISSION_TTL_SEC = 86_400
/** The idle window's calls per second are also given per slice of this many seconds. */
const SERIES_SEC = 10

const KIND_BYTE: Record<BadKind, string> = { held: '01', bomb: '02', nodeError: '03', garbage: '04' }
const kindOfKey = (key: string): BadKind => BAD_KINDS.find((kind) => key.slice(16, 18) === KIND_BYTE[kind])!
const keyFor = (kind: BadKind, index: number): Hex => `0x${KEY_PREFIX}${KIND_BYTE[kind]}${'0'.repeat(38)}${index.toString(16).padStart(8, '0')}`

function compileGate(): { abi: Abi; code: Hex } {
  const source = readFileSync(new URL('./SoakGate.sol', import.meta.url), 'utf8')
  const input = {
    language: 'Solidity',
    sources: { 'SoakGate.sol': { content: source } },
    settings: { ...compilerSettings, outputSelection: { '*': { '*': ['abi', 'evm.deployedBytecode.object'] } } },
  }
  const output = JSON.parse(solc.compile(JSON.stringify(input))) as {
    errors?: { severity: string; formattedMessage: string }[]
    contracts: Record<string, Record<string, { abi: Abi; evm: { deployedBytecode: { object: string } } }>>
  }
  const errors = (output.errors ?? []).filter((error) => error.severity === 'error')
  if (errors.length > 0) throw new Error(errors.map((error) => error.formattedMessage).join('\n'))
  const gate = output.contracts['SoakGate.sol']!.SoakGate!
  return { abi: gate.abi, code: `0x${gate.evm.deployedBytecode.object}` }
}

/** A small seeded generator (mulberry32): the same plan every run. */
function seeded(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
}

function shuffle<T>(items: T[], random: () => number): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1))
    ;[items[i], items[j]] = [items[j]!, items[i]!]
  }
  return items
}

interface Slot {
  /** Arrival at `index × arrivalMs` from the start. */
  readonly index: number
  readonly payer: Payer
  readonly kind: Kind
  readonly key?: Hex
}

/** Who submits what, when: each account's kinds shuffled, then rounds of one per account, in one shuffled order. */
function plan(payers: readonly Payer[], options: SoakOptions): Slot[] {
  const { accounts, submissions, held, poison } = options
  if (submissions % accounts !== 0) throw new Error(`soak: ${submissions} submissions do not divide among ${accounts} accounts`)
  const perAccount = submissions / accounts
  if (held + poison > submissions) throw new Error('soak: more bad submissions than submissions')
  const random = seeded(13)
  // The poison pills' kinds in turn: bomb, node error, garbage.
  const bad: BadKind[] = [...Array.from({ length: held }, () => 'held' as const), ...Array.from({ length: poison }, (_, i) => (['bomb', 'nodeError', 'garbage'] as const)[i % 3]!)]
  const kinds: Kind[][] = payers.slice(0, accounts).map(() => [])
  bad.forEach((kind, index) => kinds[index % accounts]!.push(kind))
  for (const list of kinds) {
    if (list.length > perAccount) throw new Error(`soak: an account would make more than ${perAccount} bad submissions`)
    while (list.length < perAccount) list.push('legit')
    shuffle(list, random)
  }
  const slots: Slot[] = []
  const counters: Record<BadKind, number> = { held: 0, bomb: 0, nodeError: 0, garbage: 0 }
  // The same order every round: an account's submissions are `accounts` arrivals apart.
  const order = shuffle([...Array(accounts).keys()], random)
  for (let round = 0; round < perAccount; round++) {
    for (const account of order) {
      const kind = kinds[account]![round]!
      const key = kind === 'legit' ? undefined : keyFor(kind, counters[kind]++)
      slots.push({ index: slots.length, payer: payers[account]!, kind, ...(key ? { key } : {}) })
    }
  }
  return slots
}

/** An EIP-3009 fee to the payee, valid `FEE_VALID_SEC`. */
async function fee(devnet: RelayDevnet, payer: Payer, payee: Address, amount: bigint) {
  const { deployment } = devnet
  const token = { address: deployment.usdc, name: 'USD Coin', version: '2', chainId: deployment.chainId }
  const validBefore = BigInt(Math.floor(Date.now() / 1000) + FEE_VALID_SEC)
  const typedData = transferWithAuthorizationTypedData({ token, from: payer.address, to: payee, value: amount, validAfter: 0n, validBefore, nonce: randomAuthorizationNonce() })
  const signature = await privateKeyToAccount(payer.key).signTypedData(typedData as never)
  const authorization = Object.fromEntries(Object.entries(typedData.message).map(([name, value]) => [name, String(value)]))
  return { token: deployment.usdc, authorization, signature }
}

interface Tracked {
  readonly slot: Slot
  readonly id: string
  readonly acceptedAt: number
  observedDoneAt?: number
  stage?: string
  latencyMs?: number
}

interface Arrival {
  readonly slot: Slot
  readonly call: { to: Address; data: Hex }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * The arrivals at their moments (quote → sign → submit; a bad call's change armed at the proxy
 * first), then every legitimate one followed with `status` until done or failed.
 */
async function runArrivals(devnet: RelayDevnet, mcp: LeanMcp, arrivals: readonly Arrival[], arrivalMs: number, payee: Address, deadlineMs: number, actions: Record<BadKind, WatchAction>) {
  const tracked: Tracked[] = []
  const failures: string[] = []
  const started = performance.now()
  const first = arrivals[0]?.slot.index ?? 0
  const all = arrivals.map(async ({ slot, call }) => {
    const due = started + (slot.index - first) * arrivalMs - performance.now()
    if (due > 0) await sleep(due)
    try {
      const quote = await mcp.call('quote', { chain: 'local', call, token: 'USDC', payment: 'authorization' })
      const payment = await fee(devnet, slot.payer, payee, BigInt(quote.amountBaseUnits))
      if (slot.kind !== 'legit') await devnet.proxy.watch(slot.key!, actions[slot.kind])
      const accepted = await mcp.call('submit', { chain: 'local', call, payment })
      tracked.push({ slot, id: accepted.id, acceptedAt: performance.now() })
    } catch (error) {
      failures.push(`${slot.kind}: ${error instanceof Error ? error.message : String(error)}`)
    }
  })
  let arrived = false
  void Promise.all(all).then(() => (arrived = true))
  const give = performance.now() + deadlineMs
  while (performance.now() < give) {
    const open = tracked.filter((item) => item.slot.kind === 'legit' && item.stage === undefined)
    if (arrived && open.length === 0) break
    for (let i = 0; i < open.length; i += 50) {
      await Promise.all(
        open.slice(i, i + 50).map(async (item) => {
          const status = await mcp.call('status', { id: item.id })
          if (status.stage === 'done' || status.stage === 'failed') {
            item.observedDoneAt = performance.now()
            item.stage = status.stage
            item.latencyMs = status.updatedAt - status.createdAt
          }
        }),
      )
    }
    await sleep(200)
  }
  await Promise.all(all)
  if (failures.length > 0) throw new Error(`soak: ${failures.length} submissions were not accepted; first: ${failures[0]}`)
  return { tracked, seconds: (performance.now() - started) / 1000 }
}

const cpuSec = (from: ProcessStats, to: ProcessStats) => Math.round((to.cpu.user + to.cpu.system - from.cpu.user - from.cpu.system) / 100_000) / 10

function legitRun(tracked: readonly Tracked[], seconds: number, trips: readonly RoundTrip[], cpu: number): LegitRun {
  const legit = tracked.filter((item) => item.slot.kind === 'legit')
  const done = legit.filter((item) => item.stage === 'done')
  const times = done.map((item) => item.latencyMs!).sort((a, b) => a - b)
  const observed = done.map((item) => item.observedDoneAt! - item.acceptedAt).sort((a, b) => a - b)
  return {
    submissions: legit.length,
    done: done.length,
    failed: legit.filter((item) => item.stage === 'failed').length,
    submitToDoneMs: { p50: Math.round(percentile(times, 50)), p99: Math.round(percentile(times, 99)), max: Math.round(times.at(-1) ?? NaN) },
    observedMs: { p50: Math.round(percentile(observed, 50)), p99: Math.round(percentile(observed, 99)) },
    roundTrips: trips.length,
    badRoundTrips: trips.filter((trip) => trip.keys !== undefined).length,
    seconds: Math.round(seconds * 10) / 10,
    brunoCpuSec: cpu,
  }
}

/** Bytes of an SQLite file holding `done` copies of `sample` and `waiting` copies without a transaction. */
async function storeFileBytes(sample: Submission, done: number, waiting: number): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'bruno-soak-'))
  try {
    const path = join(dir, 'store.sqlite')
    const store = new SqliteSubmissionStore(path)
    const { transaction: _transaction, ...unsent } = sample
    for (let i = 0; i < done + waiting; i++) {
      const id = randomUUID()
      await store.insert(i < done ? { ...sample, id, identity: `soak-${id}`, stage: 'done' } : { ...unsent, id, identity: `soak-${id}`, stage: 'waiting', reason: 'waiting: the call fails in simulation with a 24000-gas stipend at the fees it would be sent with: the call reverted: SoakGate: closed' })
    }
    // Closing checkpoints the WAL into the file: its size is then the database's, as pages in memory.
    await store.close()
    return statSync(path).size
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * Re-checks in a window: each key's calls (the simulations carrying it), a new look after a gap of
 * more than 300 ms; per kind, the looks and the calls carrying their keys.
 */
function looksIn(trips: readonly RoundTrip[]) {
  const byKey = new Map<string, number[]>()
  for (const trip of trips) for (const key of trip.keys ?? []) byKey.set(key, [...(byKey.get(key) ?? []), trip.at])
  const looks = Object.fromEntries(BAD_KINDS.map((kind) => [kind, { looks: 0, calls: 0 }])) as Record<BadKind, { looks: number; calls: number }>
  for (const [key, times] of byKey) {
    const kind = kindOfKey(key)
    looks[kind].calls += times.length
    looks[kind].looks += times.filter((at, i) => i === 0 || at - times[i - 1]! > 300).length
  }
  return looks
}

export async function runSoak(devnet: RelayDevnet, options: SoakOptions, log: (line: string) => void, sample?: Submission): Promise<SoakResults> {
  const started = performance.now()
  const { deployment, proxy } = devnet
  if (devnet.payers.length < options.accounts) throw new Error(`soak: ${options.accounts} accounts asked, the devnet funded ${devnet.payers.length}`)
  const gate = compileGate()
  const test = createTestClient({ mode: 'anvil', transport: http(devnet.rpcUrl) })
  await test.setCode({ address: GATE, bytecode: gate.code })
  await test.setAutomine(false)
  await test.setIntervalMining({ interval: options.blockTimeSec })
  await proxy.tag(KEY_PREFIX)
  const actions: Record<BadKind, WatchAction> = {
    held: { kind: 'close', gate: GATE },
    bomb: { kind: 'close', gate: GATE },
    nodeError: { kind: 'poison', answer: { error: { code: -32000, message: 'execution aborted (timeout = 5s)' } } },
    garbage: { kind: 'poison', answer: { result: '0xnot-a-quantity' } },
  }

  const slots = plan(devnet.payers, options)
  const legitSlots = slots.filter((slot) => slot.kind === 'legit')
  const badCall = (slot: Slot) => ({
    to: GATE,
    data:
      slot.kind === 'bomb'
        ? encodeFunctionData({ abi: gate.abi, functionName: 'bomb', args: [slot.key!, BOMB_BYTES] })
        : encodeFunctionData({ abi: gate.abi, functionName: 'pass', args: [slot.key!] }),
  })
  // The gifts signed before the clock starts: the warm-up's, the baseline's and the soak's, each its own.
  const gifts = async (list: readonly Slot[]) => Promise.all(list.map(async (slot) => ({ slot, call: await giftCall(deployment, slot.payer, devnet.friend) })))
  const warmupSlots = devnet.payers.slice(0, options.warmup).map((payer, index): Slot => ({ index, payer, kind: 'legit' }))
  const warmup = await gifts(warmupSlots)
  const baselineArrivals = await gifts(legitSlots)
  const soakArrivals: Arrival[] = await Promise.all(slots.map(async (slot) => (slot.kind === 'legit' ? { slot, call: await giftCall(deployment, slot.payer, devnet.friend) } : { slot, call: badCall(slot) })))

  const network = {
    relay: {
      submissionTtlSec: SUBMISSION_TTL_SEC,
      // Every submission comes from 127.0.0.1, one client: past the default 64 active.
      admission: { client: { maxActive: options.submissions + options.warmup } },
    },
  }
  const bruno: ServerChild = await startServerChild('bruno', [], {
    ...process.env,
    BENCH_DEVNET: JSON.stringify(deployment),
    BENCH_RPC_URL: proxy.url,
    BENCH_NETWORK: JSON.stringify(network),
  })
  try {
    const mcp = new LeanMcp(`${bruno.url}/mcp/bruno`)
    const payee = deployment.payeeVault
    // A bound, not a wait: legitimate submissions behind the held ones' re-checks took up to 83 s.
    const followMs = 300_000

    const warm = await runArrivals(devnet, mcp, warmup, 100, payee, followMs, actions)
    if (warm.tracked.some((item) => item.stage !== 'done')) throw new Error('soak: the warm-up submissions were not all done')
    const before = await bruno.stats(true)

    let mark = await proxy.count()
    const baseline = await runArrivals(devnet, mcp, baselineArrivals, options.arrivalMs, payee, followMs, actions)
    const baselineRun = legitRun(baseline.tracked, baseline.seconds, await proxy.since(mark), cpuSec(before, await bruno.stats()))
    log(`  baseline (idle relay): ${baselineRun.done}/${baselineRun.submissions} done in ${baselineRun.seconds} s, submit→done p50 ${baselineRun.submitToDoneMs.p50} ms p99 ${baselineRun.submitToDoneMs.p99} ms`)
    const afterBaseline = await bruno.stats(true)

    mark = await proxy.count()
    const soak = await runArrivals(devnet, mcp, soakArrivals, options.arrivalMs, payee, followMs, actions)
    const soakRun = legitRun(soak.tracked, soak.seconds, await proxy.since(mark), cpuSec(afterBaseline, await bruno.stats()))
    const idleFrom = performance.now()
    const bad = soak.tracked.filter((item) => item.slot.kind !== 'legit')
    log(
      `  soak (${bad.length} bad among ${soak.tracked.length}): ${soakRun.done}/${soakRun.submissions} legitimate done in ${soakRun.seconds} s, submit→done p50 ${soakRun.submitToDoneMs.p50} ms p99 ${soakRun.submitToDoneMs.p99} ms ` +
        `(${soakRun.badRoundTrips} of ${soakRun.roundTrips} round trips carried a bad call)`,
    )
    const afterSoak = await bruno.stats(true)

    // Idle: nothing arrives; the relay holds the bad ones. What it asks the node meanwhile.
    mark = await proxy.count()
    const windowStart = performance.now()
    const windowStartUnix = performance.timeOrigin + windowStart
    await sleep(options.idleSec * 1000)
    const idleTrips = await proxy.since(mark)
    const idleSec = (performance.now() - windowStart) / 1000
    const afterIdle = await bruno.stats(true)

    const badEnd = { waiting: 0, sent: 0, failed: 0, reasons: {} as Record<string, number> }
    for (let i = 0; i < bad.length; i += 50) {
      for (const status of await Promise.all(bad.slice(i, i + 50).map((item) => mcp.call('status', { id: item.id })))) {
        if (status.stage === 'waiting') badEnd.waiting++
        else if (status.stage === 'failed') badEnd.failed++
        if (status.transaction) badEnd.sent++
        const reason = String(status.reason ?? '(none)').replace(/0x[0-9a-f]{40,}/gi, '0x…').replace(/\d{5,}/g, 'N').slice(0, 140)
        badEnd.reasons[reason] = (badEnd.reasons[reason] ?? 0) + 1
      }
    }
    const methods: Record<string, number> = {}
    for (const trip of idleTrips) for (const method of trip.methods) methods[method] = (methods[method] ?? 0) + 1
    const looks = looksIn(idleTrips)
    const totalLooks = BAD_KINDS.reduce((sum, kind) => sum + looks[kind].looks, 0)
    const roundTripsPerLook = totalLooks > 0 ? idleTrips.length / totalLooks : 0
    const calls = idleTrips.reduce((sum, trip) => sum + trip.methods.length, 0)
    const callsPerLook = totalLooks > 0 ? calls / totalLooks : 0
    const series: number[] = []
    // Whole slices, and a last one of at least a second.
    for (let from = 0; from < idleSec * 1000 - 1000; from += SERIES_SEC * 1000) {
      const inBucket = idleTrips.filter((trip) => trip.at - windowStartUnix >= from && trip.at - windowStartUnix < from + SERIES_SEC * 1000)
      const span = Math.min(SERIES_SEC, idleSec - from / 1000)
      series.push(Math.round((inBucket.reduce((sum, trip) => sum + trip.methods.length, 0) / span) * 10) / 10)
    }
    const ages = bad.map((item) => (idleFrom - item.acceptedAt) / 1000)
    const scheduled = bad.reduce((sum, item) => sum + scheduledLooks(windowStart - item.acceptedAt, windowStart - item.acceptedAt + idleSec * 1000), 0)
    const perSec = idleTrips.length / idleSec
    // The last bad one's hold ends failingHoldSec after its first failed look (just after acceptance).
    const endedFrom = Math.max(...bad.map((item) => item.acceptedAt)) + (FAILING_HOLD_SEC + SERIES_SEC) * 1000 - windowStart
    const endedTrips = idleTrips.filter((trip) => trip.at - windowStartUnix >= endedFrom)
    const endedSec = idleSec - endedFrom / 1000
    const endedCalls = endedTrips.reduce((sum, trip) => sum + trip.methods.length, 0)
    const afterHoldsEnded =
      endedSec >= SERIES_SEC
        ? { fromSec: Math.round(endedFrom / 100) / 10, seconds: Math.round(endedSec * 10) / 10, calls: endedCalls, callsPerSec: Math.round((endedCalls / endedSec) * 100) / 100 }
        : undefined
    const idle = {
      seconds: Math.round(idleSec * 10) / 10,
      roundTrips: idleTrips.length,
      calls,
      perSec: Math.round(perSec * 10) / 10,
      callsPerSec: Math.round((calls / idleSec) * 10) / 10,
      callsPerSecSeries: series,
      brunoCpuSec: cpuSec(afterSoak, afterIdle),
      methods,
      ageSec: { min: Math.round(Math.min(...ages)), max: Math.round(Math.max(...ages)) },
      looks,
      untaggedCalls: calls - idleTrips.reduce((sum, trip) => sum + (trip.keys?.length ?? 0), 0),
      roundTripsPerLook: Math.round(roundTripsPerLook * 10) / 10,
      callsPerLook: Math.round(callsPerLook * 10) / 10,
      scheduledLooks: scheduled,
      ...(afterHoldsEnded ? { afterHoldsEnded } : {}),
    }
    log(
      `  idle ${idle.seconds} s, ${badEnd.waiting} still held at its end (accepted ${idle.ageSec.min}–${idle.ageSec.max} s before): ${idle.calls} calls in ${idle.roundTrips} round trips, ${idle.callsPerSec} calls/s (${idle.perSec} round trips/s; calls/s by ${SERIES_SEC} s: ${series.join(', ')}); ` +
        `${totalLooks} re-checks (the backoff alone schedules ${scheduled}), ${idle.callsPerLook} calls in ${idle.roundTripsPerLook} round trips each` +
        (afterHoldsEnded ? `; once every hold ended (from ${afterHoldsEnded.fromSec} s, ${afterHoldsEnded.seconds} s): ${afterHoldsEnded.calls} calls, ${afterHoldsEnded.callsPerSec} calls/s` : ''),
    )
    const stored = options.warmup + baseline.tracked.length + soak.tracked.length
    const storeFileMb = sample ? MB(await storeFileBytes(sample, stored - bad.length, bad.length)) : undefined
    const memory = {
      rssMb: { before: MB(before.rss), afterBaseline: MB(afterBaseline.rss), afterSoak: MB(afterSoak.rss), afterIdle: MB(afterIdle.rss) },
      heapMb: { before: MB(before.heapUsed), afterBaseline: MB(afterBaseline.heapUsed), afterSoak: MB(afterSoak.heapUsed), afterIdle: MB(afterIdle.heapUsed) },
      stored,
      ...(storeFileMb === undefined ? {} : { storeFileMb }),
    }
    log(
      `  memory after a full GC: RSS ${memory.rssMb.before} → ${memory.rssMb.afterBaseline} → ${memory.rssMb.afterSoak} → ${memory.rssMb.afterIdle} MB, ` +
        `heap ${memory.heapMb.before} → ${memory.heapMb.afterBaseline} → ${memory.heapMb.afterSoak} → ${memory.heapMb.afterIdle} MB (before, after the baseline, after the soak, after idling); ` +
        `${stored} stored${storeFileMb === undefined ? '' : ` (${storeFileMb} MB as an SQLite file)`}`,
    )
    const badCounts = Object.fromEntries(BAD_KINDS.map((kind) => [kind, bad.filter((item) => item.slot.kind === kind).length])) as Record<BadKind, number>
    return {
      accounts: options.accounts,
      submissions: soak.tracked.length,
      legit: soakRun.submissions,
      bad: badCounts,
      arrivalPerSec: Math.round(1000 / options.arrivalMs),
      blockTimeSec: options.blockTimeSec,
      config: { submissionTtlSec: SUBMISSION_TTL_SEC, clientMaxActive: network.relay.admission.client.maxActive, accountMaxActive: 'default (8)' },
      baseline: baselineRun,
      soak: soakRun,
      p99Ratio: Math.round((soakRun.submitToDoneMs.p99 / baselineRun.submitToDoneMs.p99) * 100) / 100,
      baselineKeptUp: baselineRun.done === baselineRun.submissions && baselineRun.submitToDoneMs.p99 <= 3 * options.blockTimeSec * 1000,
      badEnd,
      idle,
      memory,
      seconds: Math.round((performance.now() - started) / 1000),
    }
  } finally {
    await bruno.stop()
  }
}
