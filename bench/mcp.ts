import { isDeepStrictEqual } from 'node:util'
import hdr from 'hdr-histogram-js'
import { getAddress } from 'viem'
import { encodeTransfer } from '../core/chain/erc20Calls.ts'
import type { LoadResult } from './load.ts'
import { runLoad, startLoadChild, startServerChild, type LoadChild, type ServerChild } from './processes.ts'

/** How long each case warms up and is measured, and with how many connections. */
export interface LoadShape {
  readonly connections: number
  readonly warmupSec: number
  readonly durationSec: number
  /** How many times the cases run in turn; each round measures each case for durationSec / rounds. */
  readonly rounds: number
}

export interface CaseResult {
  readonly name: string
  readonly server: 'bruno' | 'raw' | 'rawTool' | 'sdk'
  readonly request: string
  readonly rps: number
  readonly requests: number
  readonly seconds: number
  /** Rounds measured (their requests, seconds and latencies summed). */
  readonly rounds: number
  readonly latencyMs: { readonly p50: number; readonly p90: number; readonly p99: number; readonly max: number }
  /** Server CPU (user + system) over the measured period, per request. */
  readonly cpuUsPerRequest: number
  /** Its two parts: the process's own code, and the kernel's work on its behalf (sockets, waking the load generator). */
  readonly cpuUserUsPerRequest: number
  readonly cpuSystemUsPerRequest: number
  /** Server RSS at the end of the measured period. */
  readonly rssMb: number
  /** Size of the expected response body. */
  readonly responseBytes: number
  readonly non2xx: number
  readonly errors: number
  readonly mismatches: number
  /** false when any response was non-2xx, failed, or differed from the expected bytes. */
  readonly valid: boolean
  readonly mismatchSample?: string
}

const MODERN = '2026-07-28'
const LEGACY = '2025-11-25'
const meta = { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': {} }
const recipient = getAddress('0x70997970C51812dc3A010C7d01b50e0d17dc79C8')
const transferArguments = { chain: 'local', token: 'USDC', to: recipient, amount: '12.5' }
/** What `erc20_transfer` of 12.5 USDC to the recipient must encode (the offline config's USDC). */
const expectedCall = encodeTransfer({ token: getAddress('0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913'), to: recipient, amount: 12_500_000n })

interface McpRequest {
  readonly headers: Record<string, string>
  readonly body: string
}

const base = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }

function modern(method: string, params: Record<string, unknown>, name?: string): McpRequest {
  return {
    headers: { ...base, 'mcp-protocol-version': MODERN, 'mcp-method': method, ...(name ? { 'mcp-name': name } : {}) },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: meta } }),
  }
}

export const requests = {
  call: modern('tools/call', { name: 'erc20_transfer', arguments: transferArguments }, 'erc20_transfer'),
  list: modern('tools/list', {}),
  discover: modern('server/discover', {}),
  /** The 2025 era's ping: the least a request can ask. */
  legacyPing: {
    headers: { ...base, 'mcp-protocol-version': LEGACY },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
  },
  /** A 2025-era request after the handshake: no `_meta`, the negotiated version in the header. */
  legacyCall: {
    headers: { ...base, 'mcp-protocol-version': LEGACY },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'erc20_transfer', arguments: transferArguments } }),
  },
} satisfies Record<string, McpRequest>

/** One request, answered: its status and exact bytes. */
async function probe(url: string, request: McpRequest): Promise<{ status: number; text: string; json: any }> {
  const response = await fetch(`${url}/mcp`, { method: 'POST', headers: request.headers, body: request.body })
  const text = await response.text()
  return { status: response.status, text, json: text ? JSON.parse(text) : undefined }
}

/** The bytes a case must answer with, checked for meaning first; two probes must agree byte for byte. */
async function expectedBytes(url: string, request: McpRequest, check: (json: any) => string | undefined): Promise<string> {
  const first = await probe(url, request)
  const problem = first.status !== 200 ? `HTTP ${first.status}: ${first.text.slice(0, 300)}` : check(first.json)
  if (problem) throw new Error(`probe of ${url}: ${problem}`)
  const second = await probe(url, request)
  if (second.text !== first.text) throw new Error(`probe of ${url}: two identical requests got different bytes`)
  return first.text
}

const checkCall = (json: any) =>
  isDeepStrictEqual(json?.result?.structuredContent?.calls?.[0], expectedCall) ? undefined : `unexpected tools/call result: ${JSON.stringify(json).slice(0, 300)}`
const checkList = (json: any) =>
  Array.isArray(json?.result?.tools) && json.result.tools.some((tool: any) => tool.name === 'erc20_transfer') ? undefined : 'tools/list lacks erc20_transfer'
const checkPing = (json: any) => (isDeepStrictEqual(json?.result, {}) ? undefined : `unexpected ping result: ${JSON.stringify(json)}`)
const checkDiscover = (json: any) => (json?.result?.supportedVersions?.includes(MODERN) ? undefined : 'server/discover lacks the modern version')

/** One round of one case: the load's result and the server's CPU over the measured period. */
interface Round {
  readonly load: LoadResult
  readonly cpuUs: number
  readonly cpuUserUs: number
  readonly rss: number
}

async function measureRound(server: ServerChild, request: McpRequest, expected: string, shape: LoadShape, loader?: Promise<LoadChild>): Promise<Round> {
  let before: NodeJS.CpuUsage | undefined
  const between = async () => {
    before = (await server.stats()).cpu
  }
  const load = await runLoad({ url: `${server.url}/mcp`, ...request, expected, ...shape }, between, loader)
  const after = await server.stats()
  return { load, cpuUs: after.cpu.user + after.cpu.system - (before!.user + before!.system), cpuUserUs: after.cpu.user - before!.user, rss: after.rss }
}

/** A case's rounds summed: requests and seconds added, latency histograms merged, CPU per request over all. */
function caseResult(spec: CaseSpec, expected: string, rounds: readonly Round[]): CaseResult {
  const histogram = hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: 3 })
  for (const { load } of rounds) {
    const part = hdr.decodeFromCompressedBase64(load.histogram)
    histogram.add(part)
    part.destroy()
  }
  const sum = (value: (round: Round) => number) => rounds.reduce((total, round) => total + value(round), 0)
  const requests = sum((round) => round.load.requests)
  const seconds = sum((round) => round.load.seconds)
  const non2xx = sum((round) => round.load.non2xx)
  const errors = sum((round) => round.load.errors + round.load.timeouts)
  const mismatches = sum((round) => round.load.mismatches)
  const ms = (us: number) => Math.round(us) / 1000
  const perRequest = (us: number) => Math.round((us / Math.max(1, requests)) * 10) / 10
  const mismatchSample = rounds.find((round) => round.load.mismatchSample !== undefined)?.load.mismatchSample
  const result: CaseResult = {
    name: spec.name,
    server: spec.server,
    request: JSON.parse(spec.request.body).method,
    rps: Math.round(requests / seconds),
    requests,
    seconds: Math.round(seconds * 100) / 100,
    rounds: rounds.length,
    latencyMs: {
      p50: ms(histogram.getValueAtPercentile(50)),
      p90: ms(histogram.getValueAtPercentile(90)),
      p99: ms(histogram.getValueAtPercentile(99)),
      max: ms(histogram.maxValue),
    },
    cpuUsPerRequest: perRequest(sum((round) => round.cpuUs)),
    cpuUserUsPerRequest: perRequest(sum((round) => round.cpuUserUs)),
    cpuSystemUsPerRequest: perRequest(sum((round) => round.cpuUs - round.cpuUserUs)),
    rssMb: Math.round((Math.max(...rounds.map((round) => round.rss)) / 2 ** 20) * 10) / 10,
    responseBytes: Buffer.byteLength(expected),
    non2xx,
    errors,
    mismatches,
    valid: non2xx === 0 && errors === 0 && mismatches === 0 && requests > 0,
    ...(mismatchSample === undefined ? {} : { mismatchSample }),
  }
  histogram.destroy()
  return result
}

/** One case: a server, the request every connection sends, and what its answer must mean. */
interface CaseSpec {
  readonly name: string
  readonly server: CaseResult['server']
  readonly request: McpRequest
  readonly check: (json: any) => string | undefined
  readonly env?: NodeJS.ProcessEnv
  /** The server's arguments, made when its round starts (the raw servers answer from Bruno's first answer). */
  readonly args?: () => string[]
}

/**
 * One round of one case, its server alone: start (the load generator forked beside it), probe,
 * warm up, measure, stop. A case's later rounds must answer the very bytes of its first.
 */
async function serverRound(spec: CaseSpec, args: readonly string[], expected: string | undefined, shape: LoadShape): Promise<{ round: Round; expected: string }> {
  const loader = startLoadChild()
  try {
    const server = await startServerChild(spec.server, args, spec.env ?? process.env)
    try {
      const answered = await expectedBytes(server.url, spec.request, spec.check)
      if (expected !== undefined && answered !== expected) throw new Error(`${spec.name}: a new server answered other bytes than the first round's`)
      return { round: await measureRound(server, spec.request, answered, shape, loader), expected: answered }
    } finally {
      await server.stop()
    }
  } finally {
    // runLoad stops the child it ran; this one is for a round that failed before its load.
    await loader.then(({ child }) => void child.kill(), () => undefined)
  }
}

export interface McpResults {
  readonly cases: CaseResult[]
  readonly ratios: { readonly callVsRaw: number; readonly callVsSdk: number; readonly listVsCall: number; readonly rawToolVsRaw: number; readonly callVsRawTool: number }
}

/**
 * Every MCP case, each server alone: Bruno's modern tools/call, tools/list, server/discover, a
 * legacy tools/call and a legacy ping (logging at info, as `npm start` runs), the modern tools/call
 * again at log level debug (an access line per request); the raw Fastify route answering Bruno's
 * tools/call bytes; raw Fastify doing the tool call's own work (validate, run the handler,
 * serialize) and nothing else; the SDK v2 server. The cases run in turn, `shape.rounds` times over,
 * each round measuring each case for `durationSec / rounds`: a machine whose speed drifts (a shared
 * VM) then slows every case alike, instead of whichever ran at the wrong moment.
 */
export async function runMcpCases(shape: LoadShape, log: (line: string) => void): Promise<McpResults> {
  // Each case's bytes, from its first round: the raw routes answer Bruno's, the SDK must agree with them.
  const expected = new Map<CaseSpec, string>()
  const brunoAnswer = () => expected.get(call)!
  const sdkCheck = (json: any) => {
    const problem = checkCall(json)
    if (problem) return problem
    const bruno = JSON.parse(brunoAnswer()).result.structuredContent
    return isDeepStrictEqual(json.result.structuredContent, bruno) ? undefined : 'the SDK server and Bruno disagree on structuredContent'
  }
  const call: CaseSpec = { name: 'bruno tools/call (modern)', server: 'bruno', request: requests.call, check: checkCall }
  const list: CaseSpec = { name: 'bruno tools/list (modern)', server: 'bruno', request: requests.list, check: checkList }
  const raw: CaseSpec = { name: 'raw Fastify, fixed bytes (ceiling)', server: 'raw', request: requests.call, check: checkCall, args: () => [brunoAnswer()] }
  const sameAsBruno = (json: any) => (isDeepStrictEqual(json, JSON.parse(brunoAnswer())) ? undefined : "the tool's work alone answers other than Bruno")
  const rawTool: CaseSpec = {
    name: "raw Fastify, the tool's work alone",
    server: 'rawTool',
    request: requests.call,
    check: sameAsBruno,
    args: () => [JSON.stringify(JSON.parse(brunoAnswer()).result._meta)],
  }
  const sdk: CaseSpec = { name: 'SDK v2 server on Fastify', server: 'sdk', request: requests.call, check: sdkCheck }
  const specs: CaseSpec[] = [
    call,
    list,
    { name: 'bruno server/discover', server: 'bruno', request: requests.discover, check: checkDiscover },
    { name: 'bruno tools/call (legacy 2025-11-25)', server: 'bruno', request: requests.legacyCall, check: checkCall },
    // Everything Bruno does for any request (HTTP, logging, limits, the MCP envelope) and no work:
    // the floor under every other Bruno case.
    { name: 'bruno ping (legacy), the stack alone', server: 'bruno', request: requests.legacyPing, check: checkPing },
    // The same tools/call with Bruno's log level at debug, where each request writes its access line: what that line costs.
    { name: 'bruno tools/call (modern), log level debug', server: 'bruno', request: requests.call, check: checkCall, env: { ...process.env, BENCH_LOG_LEVEL: 'debug' } },
    raw,
    rawTool,
    sdk,
  ]
  const rounds = new Map<CaseSpec, Round[]>(specs.map((spec) => [spec, []]))
  const roundShape = { ...shape, durationSec: shape.durationSec / shape.rounds }
  for (let round = 1; round <= shape.rounds; round++) {
    for (const spec of specs) {
      const measured = await serverRound(spec, spec.args?.() ?? [], expected.get(spec), roundShape)
      expected.set(spec, measured.expected)
      rounds.get(spec)!.push(measured.round)
      const { load } = measured.round
      const { cpuUs, cpuUserUs } = measured.round
      const perRequest = (us: number) => (us / Math.max(1, load.requests)).toFixed(1)
      log(`  round ${round}/${shape.rounds} ${spec.name}: ${Math.round(load.rps)} req/s, ${perRequest(cpuUs)} µs CPU/req (user ${perRequest(cpuUserUs)}, sys ${perRequest(cpuUs - cpuUserUs)})`)
    }
  }
  const cases = specs.map((spec) => caseResult(spec, expected.get(spec)!, rounds.get(spec)!))
  const of = (spec: CaseSpec) => cases[specs.indexOf(spec)]!
  const ratio = (a: number, b: number) => Math.round((a / b) * 100) / 100
  return {
    cases,
    ratios: {
      callVsRaw: ratio(of(call).rps, of(raw).rps),
      callVsSdk: ratio(of(call).rps, of(sdk).rps),
      listVsCall: ratio(of(list).rps, of(call).rps),
      rawToolVsRaw: ratio(of(rawTool).rps, of(raw).rps),
      callVsRawTool: ratio(of(call).rps, of(rawTool).rps),
    },
  }
}

/** tools/list against tools/call, both answered by one Bruno process. */
export interface ListVsCallResult {
  /** The groups served: `/mcp`'s tools/list lists their tools. */
  readonly groups: string
  readonly list: CaseResult
  readonly call: CaseResult
  /** tools/list's requests per second over tools/call's: above 1, the list is the faster. */
  readonly rpsRatio: number
  /** tools/call's CPU per request over tools/list's. */
  readonly cpuRatio: number
}

/** The groups of the other cases' server (the offline config's), then every group: the full list. */
export const LIST_GROUPS = ['erc20,uniswap', 'bruno,calibur,3009,erc20,uniswap'] as const

/**
 * tools/list against tools/call in the same Bruno process serving `groups` (the offline config, so
 * no chain is reached; every group: the full list, as an agent on `/mcp` gets it). The two loads
 * take turns on the one server, `shape.rounds` times over, each warmed up before it is measured:
 * the ratio compares the two requests, not two processes or two moments of a drifting machine.
 */
export async function runListVsCall(shape: LoadShape, groups: string, log: (line: string) => void): Promise<ListVsCallResult> {
  const env = { ...process.env, BENCH_GROUPS: groups }
  const call: CaseSpec = { name: `bruno tools/call (modern), ${groups}`, server: 'bruno', request: requests.call, check: checkCall, env }
  const list: CaseSpec = { name: `bruno tools/list (modern), ${groups}`, server: 'bruno', request: requests.list, check: checkList, env }
  const server = await startServerChild('bruno', [], env)
  try {
    const expected = new Map<CaseSpec, string>()
    for (const spec of [call, list]) expected.set(spec, await expectedBytes(server.url, spec.request, spec.check))
    const rounds = new Map<CaseSpec, Round[]>([
      [call, []],
      [list, []],
    ])
    const roundShape = { ...shape, durationSec: shape.durationSec / shape.rounds }
    for (let round = 1; round <= shape.rounds; round++) {
      for (const spec of [call, list]) {
        const measured = await measureRound(server, spec.request, expected.get(spec)!, roundShape)
        rounds.get(spec)!.push(measured)
        log(`  round ${round}/${shape.rounds} ${spec.name}: ${Math.round(measured.load.rps)} req/s, ${(measured.cpuUs / Math.max(1, measured.load.requests)).toFixed(1)} µs CPU/req`)
      }
    }
    const [callResult, listResult] = [call, list].map((spec) => caseResult(spec, expected.get(spec)!, rounds.get(spec)!)) as [CaseResult, CaseResult]
    const ratio = (a: number, b: number) => Math.round((a / b) * 100) / 100
    return {
      groups,
      list: listResult,
      call: callResult,
      rpsRatio: ratio(listResult.rps, callResult.rps),
      cpuRatio: ratio(callResult.cpuUsPerRequest, listResult.cpuUsPerRequest),
    }
  } finally {
    await server.stop()
  }
}

export interface MemoryResult {
  readonly calls: number
  readonly rssBeforeMb: number
  readonly rssAfterMb: number
  readonly growthMb: number
  readonly heapBeforeMb: number
  readonly heapAfterMb: number
  /** After a full garbage collection: what the calls left held. */
  readonly rssAfterGcMb: number
  readonly heapAfterGcMb: number
}

/** Bruno's RSS and heap before and after `calls` tools/calls (a fresh server, one probe first), and after a full GC. */
export async function runCallMemory(calls: number, connections: number): Promise<MemoryResult> {
  const server = await startServerChild('bruno')
  try {
    const expected = await expectedBytes(server.url, requests.call, checkCall)
    const before = await server.stats(true)
    const load = await runLoad({ url: `${server.url}/mcp`, ...requests.call, expected, connections, warmupSec: 0, durationSec: 0, amount: calls }, async () => {})
    if (load.non2xx || load.mismatches || load.errors) throw new Error(`memory run: ${load.non2xx} non-2xx, ${load.mismatches} mismatches, ${load.errors} errors`)
    const after = await server.stats()
    const collected = await server.stats(true)
    const mb = (bytes: number) => Math.round((bytes / 2 ** 20) * 10) / 10
    return {
      calls: load.requests,
      rssBeforeMb: mb(before.rss),
      rssAfterMb: mb(after.rss),
      growthMb: mb(after.rss - before.rss),
      heapBeforeMb: mb(before.heapUsed),
      heapAfterMb: mb(after.heapUsed),
      rssAfterGcMb: mb(collected.rss),
      heapAfterGcMb: mb(collected.heapUsed),
    }
  } finally {
    await server.stop()
  }
}
