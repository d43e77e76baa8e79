import t from 'tap'
import { benchSmoke } from './benchSmoke.ts'

// `npm run bench -- --smoke --only relay` end to end: the relay's flow runs to done, and a tiny
// soak (bench/soak.ts: 25 submissions, 10 of them held or poison pills) runs. Figures are not
// asserted (this machine runs other tests meanwhile): only validity, and the round-trip counts,
// which do not depend on load. mcp.test.ts beside it has the MCP part.

const results = await benchSmoke(t, 'relay')

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
