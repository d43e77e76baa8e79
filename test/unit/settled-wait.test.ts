import t from 'tap'
import { SettledWait } from '../../core/relay/settledWait.ts'
import type { SubmissionView } from '../../core/relay/schemas.ts'
import type { Submission } from '../../core/store/store.ts'

// SettledWait (core/relay/settledWait.ts), what the x402 binding holds a paid request on: one read of
// each held submission per tick however many wait on it, an answer as soon as it settles, the latest
// view when the time is up, and the accepted one when the store never answers.

const accepted: SubmissionView = { id: 'one', chain: 'local', stage: 'waiting', createdAt: 1, updatedAt: 1, deadline: 2 }
const stored = (stage: Submission['stage']): Submission => ({ id: 'one', chain: 'local', stage, createdAt: 1, updatedAt: 2, deadline: 2, request: {} as never })

t.test('many waiters, one read a tick; answered when done', async (t) => {
  let stage: Submission['stage'] = 'sending'
  let reads = 0
  const waits = new SettledWait({ get: async () => (reads++, stored(stage)) })
  const held = Array.from({ length: 50 }, () => waits.settled(accepted, 60_000))
  await new Promise((resolve) => setTimeout(resolve, 600))
  t.ok(reads >= 1 && reads <= 3, `${reads} reads in 600 ms for 50 waiters: one a tick`)
  stage = 'done'
  const views = await Promise.all(held)
  t.ok(views.every((view) => view.stage === 'done'), 'each answered with the settled view')
  const after = reads
  await new Promise((resolve) => setTimeout(resolve, 400))
  t.equal(reads, after, 'no read once no one waits')
})

t.test('the time up: the latest view; the store never answering: the accepted view', async (t) => {
  const waits = new SettledWait({ get: async () => stored('sending') })
  t.equal((await waits.settled(accepted, 300)).stage, 'sending', 'as last read')
  const down = new SettledWait({ get: () => Promise.reject(new Error('store down')) })
  t.same(await down.settled(accepted, 300), accepted, 'as accepted')
})
