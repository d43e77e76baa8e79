import { execFile } from 'node:child_process'
import { readFileSync, rmSync } from 'node:fs'
import { promisify } from 'node:util'
import t from 'tap'

// `npm run bench -- --smoke` end to end: every server child starts, answers the expected bytes
// under load, the relay's flow runs to done, and a tiny soak (bench/soak.ts: 25 submissions, 10 of
// them held or poison pills) runs. Figures are not asserted (this machine runs other tests
// meanwhile): only validity, and the round-trip counts, which do not depend on load.

// The smoke forks ~20 children one after another: 141 s alone on a quiet 2-core machine
// (2026-12-02), near the runner's 180 s a file even before another file runs beside it. So this
// file asks the runner for 300 s (the root test's setTimeout tells it) and gives the run 280 s;
// and the children are started without the runner's per-process hook in NODE_OPTIONS (~20 % of
// the smoke's time, measured), which records process trees for coverage this suite does not take.
t.setTimeout(300_000)
const run = promisify(execFile)
const { NODE_OPTIONS: _, ...env } = process.env
const { stdout } = await run(process.execPath, ['--import', 'tsx', 'bench/run.ts', '--smoke'], { env, timeout: 280_000, maxBuffer: 16 * 2 ** 20 })
const file = /wrote (\S+\.json)/.exec(stdout)?.[1]
t.ok(file, 'the run wrote its JSON file')
const results = JSON.parse(readFileSync(file!, 'utf8'))
rmSync(file!)

t.test('every MCP case answered the expected bytes, all 2xx', async (t) => {
  t.equal(results.mcp.cases.length, 9)
  for (const c of results.mcp.cases) {
    t.ok(c.valid, `${c.name}: ${c.non2xx} non-2xx, ${c.errors} errors, ${c.mismatches} mismatches`)
    t.ok(c.requests > 0 && c.cpuUsPerRequest > 0 && c.latencyMs.p50 > 0, `${c.name} measured`)
  }
  t.equal(results.memory.calls, 2000)
})

t.test('the relay: round trips within their targets, every submission done', async (t) => {
  const { roundTrips, timed, memory } = results.relay
  t.ok(roundTrips.quote.roundTrips <= 2, `quote: ${roundTrips.quote.roundTrips}`)
  t.ok(roundTrips.submit.roundTrips <= 3, `submit: ${roundTrips.submit.roundTrips}`)
  // A send simulates the exact transaction twice (the estimate with its fees, then the call at the signed
  // limit), then broadcasts; the pass's fee read is shared by the pass's sends.
  t.ok(roundTrips.runnerSend.roundTrips < 4, `runner send: ${roundTrips.runnerSend.roundTrips}`)
  t.equal(timed.done, timed.submissions, 'every timed submission done')
  t.equal(timed.failed, 0)
  t.equal(memory.submissions, 40)
})

t.test('the tiny soak: every legitimate submission done, every bad one held and never sent', async (t) => {
  const { soak } = results
  t.equal(soak.submissions, 25)
  t.same(soak.bad, { held: 7, bomb: 1, nodeError: 1, garbage: 1 })
  t.equal(soak.baseline.done, soak.legit, 'the baseline: every legitimate submission done')
  t.equal(soak.soak.done, soak.legit, 'beside the bad ones: every legitimate submission done')
  t.same([soak.badEnd.waiting, soak.badEnd.sent, soak.badEnd.failed], [10, 0, 0], 'the bad ones all waiting, none sent')
  t.ok(soak.idle.roundTrips >= 0 && soak.memory.stored === 42, 'idle and memory measured')
})
