import { mkdirSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { loadAverageNow, machine } from './machine.ts'
import { profileServersInto } from './processes.ts'
import { LIST_GROUPS, runCallMemory, runListVsCall, runMcpCases, type CaseResult, type ListVsCallResult, type McpResults, type MemoryResult } from './mcp.ts'
import { runRelayBench, storedSample, withRelayDevnet, type RelayResults } from './relay.ts'
import { runSoak, type SoakResults } from './soak.ts'

/**
 * `npm run bench [-- --smoke] [-- --only mcp|list|relay|soak]`: every case in one run, each server alone in
 * a child process on loopback, the load generator (autocannon) in another; prints a table and
 * writes bench/out/results-<date>.json. `--smoke` runs each case for a second without a warm-up (autocannon counts whole seconds), and a tiny soak.
 * `--only relay` runs the relay's cases and the soak; `--only soak` the soak alone (on a devnet of its own);
 * `--only list` tools/list against tools/call in one Bruno process (the other cases' groups, then every group);
 * `--soak-idle <s>` keeps the soak's relay idle that long (default 180 s: past `relay.failingHoldSec`) while its calls to the node are counted.
 */

const args = process.argv.slice(2)
const smoke = args.includes('--smoke')
const only = args.includes('--only') ? args[args.indexOf('--only') + 1] : undefined
const log = (line: string) => process.stdout.write(`${line}\n`)
const stamp = new Date().toISOString().replace(/[:.]/g, '-')
if (args.includes('--profile')) {
  const dir = fileURLToPath(new URL(`./out/profiles-${stamp}/`, import.meta.url))
  profileServersInto(dir)
  process.stdout.write(`CPU profiles of every server child: ${dir} (summary: npx tsx bench/profile.ts ${dir})\n`)
}

const shape = smoke ? { connections: 10, warmupSec: 0, durationSec: 1, rounds: 1 } : { connections: 10, warmupSec: 2, durationSec: 12, rounds: 3 }
// `--soak-idle <s>`: another idle window (the default outlasts the bad ones' holds).
const soakIdleSec = args.includes('--soak-idle') ? Number(args[args.indexOf('--soak-idle') + 1]) : undefined
const relayOptions = smoke
  ? { accounts: 20, totalSubmissions: 40, arrivalMs: 50, blockTimeSec: 2 }
  : { accounts: 200, totalSubmissions: 1_000, arrivalMs: 50, blockTimeSec: 2 }
const memoryCalls = smoke ? 2_000 : 10_000
// Issue 13's soak (bench/soak.ts): 1,000 submissions from 200 accounts, 300 held and 100 poison pills among them.
const soakOptions = smoke
  ? { accounts: 5, submissions: 25, held: 7, poison: 3, arrivalMs: 50, blockTimeSec: 1, idleSec: 2, warmup: 2 }
  : { accounts: 200, submissions: 1_000, held: 300, poison: 100, arrivalMs: 25, blockTimeSec: 2, idleSec: 180, warmup: 10 }
if (soakIdleSec !== undefined) soakOptions.idleSec = soakIdleSec

function pad(text: string, width: number, right = false): string {
  return right ? text.padStart(width) : text.padEnd(width)
}

export function mcpTable(mcp: McpResults): string {
  const raw = mcp.cases.find((c) => c.server === 'raw')!
  const sdk = mcp.cases.find((c) => c.server === 'sdk')!
  const header = ['case', 'req/s', 'p50 ms', 'p99 ms', 'CPU µs/req', 'user', 'sys', 'RSS MB', 'bytes', 'non-2xx', 'mismatch', 'vs raw', 'vs SDK', 'valid']
  const rows = mcp.cases.map((c: CaseResult) => [
    c.name,
    String(c.rps),
    c.latencyMs.p50.toFixed(3),
    c.latencyMs.p99.toFixed(3),
    c.cpuUsPerRequest.toFixed(1),
    c.cpuUserUsPerRequest.toFixed(1),
    c.cpuSystemUsPerRequest.toFixed(1),
    c.rssMb.toFixed(1),
    String(c.responseBytes),
    String(c.non2xx),
    String(c.mismatches),
    `${Math.round((c.rps / raw.rps) * 100)}%`,
    `${(c.rps / sdk.rps).toFixed(1)}×`,
    c.valid ? 'yes' : 'NO',
  ])
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)))
  const line = (cells: string[]) => `| ${cells.map((cell, i) => pad(cell, widths[i]!, i > 0 && i < 13)).join(' | ')} |`
  return [line(header), `|${widths.map((w, i) => (i > 0 && i < 13 ? `${'-'.repeat(w + 1)}:` : '-'.repeat(w + 2))).join('|')}|`, ...rows.map(line)].join('\n')
}

function relayLines(relay: RelayResults): string {
  const { roundTrips: r, timed: t, statusRead: s, memory: m } = relay
  const methods = (trips: string[][]) => trips.map((trip) => (trip.length > 1 ? `[${trip.join(', ')}]` : trip[0])).join(' → ')
  return [
    `| operation | RPC round trips | what |`,
    `|---|---:|---|`,
    `| quote | ${r.quote.roundTrips} | ${methods(r.quote.methods)} |`,
    `| submit | ${r.submit.roundTrips} | ${methods(r.submit.methods)} |`,
    `| runner send (per submission, pass of ${r.runnerSend.batch}) | ${r.runnerSend.roundTrips} | ${methods(r.runnerSend.methods.slice(0, Math.ceil(r.runnerSend.roundTrips)))} (+${r.runnerSend.nonceRead} nonce read per pass when the nonce is unknown) |`,
    `| runner follow to done (per submission, pass of ${r.runnerFollow.batch}) | ${r.runnerFollow.roundTrips} | ${methods(r.runnerFollow.methods.slice(0, 3))}… |`,
    '',
    `${t.submissions} submissions from ${t.submissions} accounts (flow 2), ${t.arrivalPerSec}/s, a block every ${t.blockTimeSec} s:`,
    `- done ${t.done}, failed ${t.failed}; submit → done p50 ${t.submitToDoneMs.p50} ms, p99 ${t.submitToDoneMs.p99} ms, max ${t.submitToDoneMs.max} ms`,
    `- blocks from arrival to inclusion: max ${t.blocksToInclusion.max} (${Object.entries(t.blocksToInclusion.histogram).map(([k, v]) => `${k}: ${v}`).join(', ')}); every one within 3 blocks: ${t.withinThreeBlocks ? 'yes' : 'NO'}`,
    `- submissions per block: max ${t.perBlock.max}, mean ${t.perBlock.mean} over ${t.perBlock.blocks} blocks`,
    `- RPC round trips per submission over the run (quote + submit + runner): ${t.roundTripsPerSubmission}`,
    `- status read (store): ${s.memoryUs} µs in memory, ${s.fileUs} µs from a file (${s.stored} stored, ${s.reads} reads)`,
    `- Bruno RSS: ${m.rssBeforeMb} MB before, ${m.rssAfterTimedMb} MB after ${t.submissions}, ${m.rssAfterAllMb} MB after ${m.submissions} submissions (growth ${m.growthMb} MB); after a full GC: RSS ${m.rssAfterAllGcMb} MB, heap ${m.heapBeforeMb} → ${m.heapAfterAllGcMb} MB`,
  ].join('\n')
}

export function soakLines(soak: SoakResults): string {
  const { baseline: b, soak: s, idle: i, memory: m, badEnd: e } = soak
  const kinds = Object.entries(soak.bad).map(([kind, count]) => `${count} ${kind}`).join(', ')
  return [
    `${soak.submissions} submissions from ${soak.accounts} accounts, ${soak.arrivalPerSec}/s, a block every ${soak.blockTimeSec} s: ${soak.legit} legitimate, ${kinds}`,
    `(relay.submissionTtlSec ${soak.config.submissionTtlSec}, relay.admission.client.maxActive ${soak.config.clientMaxActive}, account limits ${soak.config.accountMaxActive})`,
    `| run | legitimate done | submit → done p50 ms | p99 ms | max ms | round trips (carrying a bad call) | s | Bruno CPU s |`,
    `|---|---:|---:|---:|---:|---:|---:|---:|`,
    `| idle relay (baseline) | ${b.done}/${b.submissions} | ${b.submitToDoneMs.p50} | ${b.submitToDoneMs.p99} | ${b.submitToDoneMs.max} | ${b.roundTrips} | ${b.seconds} | ${b.brunoCpuSec} |`,
    `| with the bad ones | ${s.done}/${s.submissions} | ${s.submitToDoneMs.p50} | ${s.submitToDoneMs.p99} | ${s.submitToDoneMs.max} | ${s.roundTrips} (${s.badRoundTrips}) | ${s.seconds} | ${s.brunoCpuSec} |`,
    `- p99 ${soak.p99Ratio}× the baseline's; bad ones at the end: ${e.waiting} waiting, ${e.sent} sent, ${e.failed} failed`,
    ...Object.entries(e.reasons).map(([reason, count]) => `  - ${count}: ${reason}`),
    `- idle ${i.seconds} s after them (accepted ${i.ageSec.min}–${i.ageSec.max} s before): ${i.calls} JSON-RPC calls to the node in ${i.roundTrips} round trips, ` +
      `${i.callsPerSec} calls/s (${i.perSec} round trips/s; calls/s by 10 s: ${i.callsPerSecSeries.join(', ')}); Bruno CPU ${i.brunoCpuSec} s`,
    `- re-checks in the window: ${Object.entries(i.looks).map(([kind, l]) => `${kind} ${l.looks} (${Math.round((l.calls / Math.max(1, l.looks)) * 10) / 10} simulations each)`).join(', ')} ` +
      `(the backoff alone schedules ${i.scheduledLooks}); ${i.untaggedCalls} other calls (block, fees, price, chain id); ` +
      `in all ${i.callsPerLook} calls in ${i.roundTripsPerLook} round trips per re-check` +
      (i.afterHoldsEnded
        ? `; once every bad one had failed (from ${i.afterHoldsEnded.fromSec} s into the window, ${i.afterHoldsEnded.seconds} s): ${i.afterHoldsEnded.calls} calls, ${i.afterHoldsEnded.callsPerSec} calls/s`
        : `; the window ended before every bad one could fail (relay.failingHoldSec): run with --soak-idle 180`),
    `- Bruno after a full GC (after the warm-up → the baseline → the soak → idling): RSS ${m.rssMb.before} → ${m.rssMb.afterBaseline} → ${m.rssMb.afterSoak} → ${m.rssMb.afterIdle} MB, ` +
      `heap ${m.heapMb.before} → ${m.heapMb.afterBaseline} → ${m.heapMb.afterSoak} → ${m.heapMb.afterIdle} MB; ${m.stored} submissions stored${m.storeFileMb === undefined ? '' : ` (${m.storeFileMb} MB as an SQLite file)`}`,
  ].join('\n')
}

function listVsCallLines(results: readonly ListVsCallResult[]): string {
  const row = (c: CaseResult) => `| ${c.name} | ${c.rps} | ${c.latencyMs.p50.toFixed(3)} | ${c.latencyMs.p99.toFixed(3)} | ${c.cpuUsPerRequest.toFixed(1)} | ${c.responseBytes} | ${c.valid ? 'yes' : 'NO'} |`
  return [
    'tools/list and tools/call in turn, each pair from one Bruno process:',
    '| case | req/s | p50 ms | p99 ms | CPU µs/req | bytes | valid |',
    '|---|--:|--:|--:|--:|--:|---|',
    ...results.flatMap((result) => [row(result.call), row(result.list)]),
    ...results.map((result) => `${result.groups}: tools/list ${result.rpsRatio}× tools/call by req/s; tools/call's CPU per request ${result.cpuRatio}× tools/list's`),
  ].join('\n')
}

function memoryLine(memory: MemoryResult): string {
  return `Bruno RSS before/after ${memory.calls} tools/call: ${memory.rssBeforeMb} MB → ${memory.rssAfterMb} MB (growth ${memory.growthMb} MB; heap ${memory.heapBeforeMb} → ${memory.heapAfterMb} MB); after a full GC: RSS ${memory.rssAfterGcMb} MB, heap ${memory.heapAfterGcMb} MB`
}

const started = performance.now()
const host = machine()
log(`Bruno bench${smoke ? ' (smoke)' : ''}: ${host.cpu}, ${host.cores} cores, Node ${host.node}, commit ${host.commit}, load average ${host.loadAverage}`)
let mcp: McpResults | undefined
let listVsCall: ListVsCallResult[] | undefined
let memory: MemoryResult | undefined
let relay: RelayResults | undefined
let soak: SoakResults | undefined
if (only === undefined || only === 'mcp') {
  log(`MCP cases: ${shape.connections} connections; ${shape.rounds} rounds, each case in each a fresh server, ${shape.warmupSec} s warm-up, ${shape.durationSec / shape.rounds} s measured`)
  mcp = await runMcpCases(shape, log)
  log(`Memory: ${memoryCalls} tools/call`)
  memory = await runCallMemory(memoryCalls, shape.connections)
}
if (only === undefined || only === 'mcp' || only === 'list') {
  log(`tools/list against tools/call, one process each for ${LIST_GROUPS.join(' and ')}: ${shape.rounds} rounds, ${shape.warmupSec} s warm-up, ${shape.durationSec / shape.rounds} s measured each`)
  listVsCall = []
  for (const groups of LIST_GROUPS) listVsCall.push(await runListVsCall(shape, groups, log))
}
if (only === 'soak') {
  log(`Soak: held submissions and poison pills`)
  soak = await withRelayDevnet(soakOptions.accounts, log, async (devnet) => runSoak(devnet, soakOptions, log, await storedSample(devnet)))
} else if (only !== 'mcp' && only !== 'list') {
  log(`Relay on the local chain`)
  relay = await runRelayBench(relayOptions, log, soakOptions)
  soak = relay.soak
}
const seconds = Math.round((performance.now() - started) / 1000)
const loadAverageAtEnd = loadAverageNow()

const targets = {
  ...(mcp
    ? {
        'tools/call ≥ 55% of raw Fastify': mcp.ratios.callVsRaw >= 0.55,
        'tools/call ≥ 5× the SDK v2 server': mcp.ratios.callVsSdk >= 5,
        'tools/list faster than tools/call': mcp.ratios.listVsCall > 1,
        'every MCP case valid': mcp.cases.every((c) => c.valid),
      }
    : {}),
  ...(listVsCall
    ? {
        ...Object.fromEntries(listVsCall.map((result) => [`tools/list faster than tools/call in one process serving ${result.groups}`, result.rpsRatio > 1])),
        'tools/list and tools/call valid in one process': listVsCall.every((result) => result.list.valid && result.call.valid),
      }
    : {}),
  ...(relay
    ? {
        'quote ≤ 3 round trips': relay.roundTrips.quote.roundTrips <= 3,
        'submit ≤ 4 round trips': relay.roundTrips.submit.roundTrips <= 4,
        'runner send ≤ 3 round trips': relay.roundTrips.runnerSend.roundTrips <= 3,
        [`${relay.timed.submissions} submissions each done within 3 blocks`]: relay.timed.withinThreeBlocks,
      }
    : {}),
  ...(soak
    ? {
        'soak: every legitimate submission done, every bad one held or failed, none sent':
          soak.soak.done === soak.soak.submissions && soak.badEnd.waiting + soak.badEnd.failed === soak.submissions - soak.legit && soak.badEnd.sent === 0,
        'soak: the baseline (idle relay) kept up, p99 within 3 blocks (else the ratio below compares two backlogs)': soak.baselineKeptUp,
        'soak: legitimate p99 within 2× the idle relay\'s': soak.p99Ratio <= 2,
        // "Near 0": at most one call a second while nothing arrives, once the bad ones were given up.
        'soak: idle relay after the bad ones failed ≤ 1 RPC call/s': soak.idle.afterHoldsEnded !== undefined && soak.idle.afterHoldsEnded.callsPerSec <= 1,
      }
    : {}),
}

log('')
if (mcp) {
  log(mcpTable(mcp))
  log('')
  log(`tools/call: ${Math.round(mcp.ratios.callVsRaw * 100)}% of raw Fastify, ${mcp.ratios.callVsSdk}× the SDK v2 server; tools/list ${mcp.ratios.listVsCall}× tools/call`)
  log(`the tool's work alone on raw Fastify: ${Math.round(mcp.ratios.rawToolVsRaw * 100)}% of raw Fastify; Bruno's tools/call ${Math.round(mcp.ratios.callVsRawTool * 100)}% of it`)
  log(memoryLine(memory!))
  log('')
}
if (listVsCall) {
  log(listVsCallLines(listVsCall))
  log('')
}
if (relay) {
  log(relayLines(relay))
  log('')
}
if (soak) {
  log(soakLines(soak))
  log('')
}
for (const [target, met] of Object.entries(targets)) log(`${met ? 'met ' : 'MISSED'}  ${target}`)
log(`(${seconds} s; load average ${host.loadAverage} at the start, ${loadAverageAtEnd} at the end)`)

const out = fileURLToPath(new URL('./out/', import.meta.url))
mkdirSync(out, { recursive: true })
const file = `${out}results-${stamp}${smoke ? '-smoke' : ''}.json`
writeFileSync(file, `${JSON.stringify({ date: new Date().toISOString(), smoke, seconds, machine: { ...host, loadAverageAtEnd }, shape, mcp, listVsCall, memory, relay: relay && { ...relay, soak: undefined }, soak, targets }, null, 2)}\n`)
log(`wrote ${file}`)
