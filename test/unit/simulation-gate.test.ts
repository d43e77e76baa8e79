import t from 'tap'
import type { AdmissionRefusal } from '../../core/relay/admission.ts'
import { SimulationGate, simulateAs } from '../../core/relay/simulationGate.ts'
import { ToolError } from '../../core/tool/tool.ts'

// core/relay/simulationGate.ts on a clock of its own: each bound at its edge, the words and the
// /metrics label of each refusal, and what simulateAs counts.

function gate(limits: { atOnce?: number; refusedGas?: bigint } = {}) {
  let now = 1_000_000
  const refusals: AdmissionRefusal[] = []
  const simulations = new SimulationGate({ atOnce: limits.atOnce ?? 2, refusedGasPerWindow: limits.refusedGas ?? 30n, windowMs: 60_000 }, (reason) => refusals.push(reason), () => now)
  return { simulations, refusals, advance: (ms: number) => (now += ms), now: () => now }
}

const refusal = (enter: () => unknown): string => {
  try {
    enter()
  } catch (error) {
    if (error instanceof ToolError) return error.message
    throw error
  }
  return 'entered'
}

t.test('atOnce under way; the next is refused at once, and enters once one ends', async (t) => {
  const { simulations, refusals } = gate({ atOnce: 2 })
  const first = simulations.enter('a')
  simulations.enter('a')
  t.equal(refusal(() => simulations.enter('a')), 'refused: the client a has 2 quotes or submits being simulated, the most it may have at once: wait for their answers')
  t.same(refusals, ['client_simulating'])
  t.equal(refusal(() => simulations.enter('b')), 'entered', 'another client is not bounded by a\'s')
  first.accepted()
  first.accepted()
  t.equal(refusal(() => simulations.enter('a')), 'entered', 'one ended (twice: counted once): a place')
  t.match(refusal(() => simulations.enter('a')), /has 2 quotes or submits being simulated/, 'full again')
})

t.test('refused gas: below the budget a client goes on; at it exactly, refused', async (t) => {
  const { simulations, refusals, now } = gate({ atOnce: 10, refusedGas: 30n })
  const firstAt = now()
  simulations.enter('a').refused(10n)
  simulations.enter('a').refused(19n)
  simulations.enter('a').accepted()
  const last = simulations.enter('a')
  t.same(refusals, [], '29 of 30: still simulated')
  last.refused(1n)
  t.equal(
    refusal(() => simulations.enter('a')),
    `refused: the client a's refused quotes and submits ran 30 gas on the node in the last 60 s, the most this relay simulates for refusals: try again after ${new Date(firstAt + 60_000).toISOString()}, with a call that succeeds and a payment that covers it`,
  )
  t.same(refusals, ['client_refused_gas'])
})

t.test('refused gas at the budget: refused, the until the time the oldest entries leave it below', async (t) => {
  const { simulations, refusals, advance, now } = gate({ atOnce: 10, refusedGas: 30n })
  const firstAt = now()
  simulations.enter('a').refused(20n)
  advance(10_000)
  const secondAt = now()
  simulations.enter('a').refused(20n)
  advance(5_000)
  t.equal(
    refusal(() => simulations.enter('a')),
    `refused: the client a's refused quotes and submits ran 40 gas on the node in the last 60 s, the most this relay simulates for refusals: try again after ${new Date(firstAt + 60_000).toISOString()}, with a call that succeeds and a payment that covers it`,
  )
  t.same(refusals, ['client_refused_gas'])
  t.equal(refusal(() => simulations.enter('b')), 'entered', 'another client is not refused')
  advance(firstAt + 60_000 - now())
  t.equal(refusal(() => simulations.enter('a').refused(20n)), 'entered', 'the first aged out: 20 of 30 left')
  t.match(refusal(() => simulations.enter('a')), new RegExp(`ran 40 gas .* try again after ${new Date(secondAt + 60_000).toISOString().replace(/\./g, '\\.')}`))
})

t.test('an unnamed client is not bounded', async (t) => {
  const { simulations } = gate({ atOnce: 1, refusedGas: 1n })
  for (let index = 0; index < 5; index++) simulations.enter(undefined).refused(100n)
  t.equal(refusal(() => simulations.enter(undefined)), 'entered')
})

t.test('simulateAs: a ToolError counts what was measured, or the unmeasured gas; any other error and a result count nothing', async (t) => {
  const { simulations } = gate({ atOnce: 5, refusedGas: 100n })
  await t.rejects(simulateAs(simulations, 'a', 60n, async () => { throw new ToolError('refused: short') }), new ToolError('refused: short'))
  await t.rejects(simulateAs(simulations, 'a', 60n, async (measured) => { measured(30n); throw new ToolError('refused: too big') }))
  t.equal(refusal(() => simulations.enter('a').accepted()), 'entered', '90 of 100')
  await t.rejects(simulateAs(simulations, 'a', 60n, async () => { throw new Error('the node broke off') }))
  t.equal(await simulateAs(simulations, 'a', 60n, async (measured) => { measured(1_000n); return 'quoted' }), 'quoted')
  t.equal(refusal(() => simulations.enter('a').accepted()), 'entered', 'still 90: a fault and a result count nothing')
  await t.rejects(simulateAs(simulations, 'a', 60n, async (measured) => { measured(10n); throw new ToolError('refused') }))
  t.match(refusal(() => simulations.enter('a')), /ran 100 gas/)
  t.equal(await simulateAs(undefined, 'a', 60n, async () => 'ungated'), 'ungated', 'no gate: runs')
})
