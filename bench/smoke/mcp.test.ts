import t from 'tap'
import { benchSmoke } from './benchSmoke.ts'

// `npm run bench -- --smoke --only mcp` end to end: every server child starts and answers the
// expected bytes under load, and the memory case runs. Figures are not asserted (this machine runs
// other tests meanwhile): only validity. relay.test.ts beside it has the relay's part.

const results = await benchSmoke(t, 'mcp')

t.test('every MCP case answered the expected bytes, all 2xx', async (t) => {
  t.equal(results.mcp.cases.length, 9)
  for (const c of results.mcp.cases) {
    t.ok(c.valid, `${c.name}: ${c.non2xx} non-2xx, ${c.errors} errors, ${c.mismatches} mismatches`)
    t.ok(c.requests > 0 && c.cpuUsPerRequest > 0 && c.latencyMs.p50 > 0, `${c.name} measured`)
  }
  t.equal(results.memory.calls, 2000)
})

t.test('tools/list and tools/call in one process: both valid, for each set of groups', async (t) => {
  t.equal(results.listVsCall.length, 2)
  for (const result of results.listVsCall) t.ok(result.list.valid && result.call.valid, `${result.groups}: list and call valid`)
})
