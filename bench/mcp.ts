import { isDeepStrictEqual } from 'node:util'
import { getAddress } from 'viem'
import { encodeTransfer } from '../core/erc20Calls.ts'
import type { LoadResult } from './load.ts'
import { runLoad, startServerChild, type ServerChild } from './processes.ts'

/** How long each case warms up and is measured, and with how many connections. */
export interface LoadShape {
  readonly connections: number
  readonly warmupSec: number
  readonly durationSec: number
}

export interface CaseResult {
  readonly name: string
  readonly server: 'bruno' | 'raw' | 'sdk'
  readonly request: string
  readonly rps: number
  readonly requests: number
  readonly seconds: number
  readonly latencyMs: { readonly p50: number; readonly p90: number; readonly p99: number; readonly max: number }
  /** Server CPU (user + system) over the measured period, per request. */
  readonly cpuUsPerRequest: number
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
const checkDiscover = (json: any) => (json?.result?.supportedVersions?.includes(MODERN) ? undefined : 'server/discover lacks the modern version')

async function measureCase(name: string, kind: CaseResult['server'], server: ServerChild, request: McpRequest, expected: string, shape: LoadShape): Promise<CaseResult> {
  let before: NodeJS.CpuUsage | undefined
  const load: LoadResult = await runLoad({ url: `${server.url}/mcp`, ...request, expected, ...shape }, async () => {
    before = (await server.stats()).cpu
  })
  const after = await server.stats()
  const cpuUs = after.cpu.user + after.cpu.system - (before!.user + before!.system)
  const us = (value: number) => Math.round(value) / 1000
  return {
    name,
    server: kind,
    request: JSON.parse(request.body).method,
    rps: Math.round(load.rps),
    requests: load.requests,
    seconds: Math.round(load.seconds * 100) / 100,
    latencyMs: { p50: us(load.latencyUs.p50), p90: us(load.latencyUs.p90), p99: us(load.latencyUs.p99), max: us(load.latencyUs.max) },
    cpuUsPerRequest: Math.round((cpuUs / Math.max(1, load.requests)) * 10) / 10,
    rssMb: Math.round((after.rss / 2 ** 20) * 10) / 10,
    responseBytes: Buffer.byteLength(expected),
    non2xx: load.non2xx,
    errors: load.errors + load.timeouts,
    mismatches: load.mismatches,
    valid: load.non2xx === 0 && load.errors === 0 && load.timeouts === 0 && load.mismatches === 0 && load.requests > 0,
    ...(load.mismatchSample === undefined ? {} : { mismatchSample: load.mismatchSample }),
  }
}

/** Runs one server alone for one case: start, probe, warm up, measure, stop. */
async function serverCase(
  name: string,
  kind: CaseResult['server'],
  args: readonly string[],
  request: McpRequest,
  check: (json: any) => string | undefined,
  shape: LoadShape,
  log: (line: string) => void,
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ result: CaseResult; expected: string }> {
  const server = await startServerChild(kind, args, env)
  try {
    const expected = await expectedBytes(server.url, request, check)
    const result = await measureCase(name, kind, server, request, expected, shape)
    log(`  ${name}: ${result.rps} req/s, p50 ${result.latencyMs.p50} ms, p99 ${result.latencyMs.p99} ms${result.valid ? '' : ' (INVALID)'}`)
    return { result, expected }
  } finally {
    await server.stop()
  }
}

export interface McpResults {
  readonly cases: CaseResult[]
  readonly ratios: { readonly callVsRaw: number; readonly callVsSdk: number; readonly listVsCall: number }
}

/**
 * Every MCP case, each server alone: Bruno's modern tools/call, tools/list, server/discover and a
 * legacy tools/call (logging at info, as `npm start` runs), the modern tools/call again at log level
 * warn; the raw Fastify route answering Bruno's tools/call bytes; the SDK v2 server.
 */
export async function runMcpCases(shape: LoadShape, log: (line: string) => void): Promise<McpResults> {
  const call = await serverCase('bruno tools/call (modern)', 'bruno', [], requests.call, checkCall, shape, log)
  const list = await serverCase('bruno tools/list (modern)', 'bruno', [], requests.list, checkList, shape, log)
  const discover = await serverCase('bruno server/discover', 'bruno', [], requests.discover, checkDiscover, shape, log)
  const legacy = await serverCase('bruno tools/call (legacy 2025-11-25)', 'bruno', [], requests.legacyCall, checkCall, shape, log)
  // The same tools/call with Bruno's log level at warn: what the two request log lines cost.
  const quiet = await serverCase('bruno tools/call (modern), log level warn', 'bruno', [], requests.call, checkCall, shape, log, { ...process.env, BENCH_LOG_LEVEL: 'warn' })
  const raw = await serverCase('raw Fastify, fixed bytes (ceiling)', 'raw', [call.expected], requests.call, checkCall, shape, log)
  const sdkCheck = (json: any) => {
    const problem = checkCall(json)
    if (problem) return problem
    const bruno = JSON.parse(call.expected).result.structuredContent
    return isDeepStrictEqual(json.result.structuredContent, bruno) ? undefined : 'the SDK server and Bruno disagree on structuredContent'
  }
  const sdk = await serverCase('SDK v2 server on Fastify', 'sdk', [], requests.call, sdkCheck, shape, log)
  const ratio = (a: number, b: number) => Math.round((a / b) * 100) / 100
  return {
    cases: [call.result, list.result, discover.result, legacy.result, quiet.result, raw.result, sdk.result],
    ratios: {
      callVsRaw: ratio(call.result.rps, raw.result.rps),
      callVsSdk: ratio(call.result.rps, sdk.result.rps),
      listVsCall: ratio(list.result.rps, call.result.rps),
    },
  }
}

export interface MemoryResult {
  readonly calls: number
  readonly rssBeforeMb: number
  readonly rssAfterMb: number
  readonly growthMb: number
  readonly heapBeforeMb: number
  readonly heapAfterMb: number
}

/** Bruno's RSS before and after `calls` tools/calls (a fresh server, one probe first). */
export async function runCallMemory(calls: number, connections: number): Promise<MemoryResult> {
  const server = await startServerChild('bruno')
  try {
    const expected = await expectedBytes(server.url, requests.call, checkCall)
    const before = await server.stats()
    const load = await runLoad({ url: `${server.url}/mcp`, ...requests.call, expected, connections, warmupSec: 0, durationSec: 0, amount: calls }, async () => {})
    if (load.non2xx || load.mismatches || load.errors) throw new Error(`memory run: ${load.non2xx} non-2xx, ${load.mismatches} mismatches, ${load.errors} errors`)
    const after = await server.stats()
    const mb = (bytes: number) => Math.round((bytes / 2 ** 20) * 10) / 10
    return {
      calls: load.requests,
      rssBeforeMb: mb(before.rss),
      rssAfterMb: mb(after.rss),
      growthMb: mb(after.rss - before.rss),
      heapBeforeMb: mb(before.heapUsed),
      heapAfterMb: mb(after.heapUsed),
    }
  } finally {
    await server.stop()
  }
}
