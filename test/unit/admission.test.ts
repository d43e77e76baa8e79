import { setImmediate as yieldOnce } from 'node:timers/promises'
import t, { type Test } from 'tap'
import { admit, type AdmissionRefusal } from '../../core/relay/admission.ts'
import type { RelayContext } from '../../core/relay/context.ts'
import { SqliteSubmissionStore } from '../../core/store/sqliteStore.ts'
import type { Submission } from '../../core/store/store.ts'
import { ToolError } from '../../core/tool/tool.ts'
import { fakeClient, fakeNetwork, networkConfig } from './fakeChain.ts'

// Admission by standing (core/relay/admission.ts) against a real SQLite store in memory: each limit at
// its edge, each refusal's words and metric label. Default limits: an account may have 8 active, 1
// once it has 2 faults, none for banSec once it has 5 (or one reverted payment); a client 64, 10, 25.

const payer = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'
const client = '203.0.113.7'
let serial = 0

async function setup(t: Test, admission: Record<string, unknown> = {}) {
  const base = networkConfig()
  const config = { ...base, relay: { ...base.relay, admission: { ...base.relay.admission, ...admission } } }
  const store = new SqliteSubmissionStore(':memory:')
  t.teardown(() => store.close())
  const fence = await store.takeRunnerKey('unit')
  const refusals: AdmissionRefusal[] = []
  const context = { network: fakeNetwork(fakeClient({}).client, config), store, refused: (reason: AdmissionRefusal) => refusals.push(reason) } as unknown as RelayContext
  /** `count` submissions of a party: active (waiting), or failed with a fault. */
  const add = async (count: number, party: { payer?: string; client?: string }, fault?: 'payer' | 'revert') => {
    for (let index = 0; index < count; index++) {
      const now = Date.now()
      const submission: Submission = {
        id: `s${++serial}`,
        chain: 'local',
        stage: 'waiting',
        createdAt: now,
        updatedAt: now,
        deadline: Math.floor(now / 1000) + 600,
        request: { call: { to: payer, data: '0x' } } as never,
        identity: `id${serial}`,
        payer: party.payer ?? `0x${serial.toString(16).padStart(40, '0')}`,
        ...(party.client ? { client: party.client } : {}),
      }
      await store.insert(submission)
      if (fault) await store.update(submission.id, { stage: 'failed', fault }, fence)
    }
  }
  return { context, store, refusals, add }
}

/** Until the clock has moved past the last write (a condition, not a fixed sleep). */
async function clockMoves(): Promise<void> {
  const start = Date.now()
  while (Date.now() <= start) await yieldOnce()
}

const refusedWith = async (t: Test, promise: Promise<unknown>, message: string | RegExp) => {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  )
  t.type(error, ToolError)
  if (typeof message === 'string') t.equal((error as Error).message, message)
  else t.match((error as Error).message, message)
}

t.test('an account: up to 8 active submissions', async (t) => {
  const { context, refusals, add } = await setup(t)
  await add(7, { payer })
  await t.resolves(admit(context, payer, undefined))
  await add(1, { payer })
  await refusedWith(t, admit(context, payer, undefined), `refused: the account ${payer} has 8 active submissions, the most it may have: wait for one to be done or failed`)
  t.same(refusals, ['account_busy'])
})

t.test('an account with 2 faults may have 1 active; with 1 fault, more', async (t) => {
  let { context, refusals, add } = await setup(t)
  await add(1, { payer }, 'payer')
  await add(1, { payer })
  await t.resolves(admit(context, payer, undefined), 'one fault: not throttled')
  ;({ context, refusals, add } = await setup(t))
  await add(2, { payer }, 'payer')
  await t.resolves(admit(context, payer, undefined), 'throttled, none active')
  await add(1, { payer })
  await refusedWith(t, admit(context, payer, undefined), `refused: the account ${payer} has 1 active submission, the most it may have while throttled (2 recent failures of its own doing): wait for one to be done or failed`)
  t.same(refusals, ['account_busy'])
})

t.test('an account with 5 faults is refused until banSec after the latest', async (t) => {
  const { context, store, refusals, add } = await setup(t)
  await add(4, { payer }, 'payer')
  await t.resolves(admit(context, payer, undefined), '4 faults: throttled, not banned')
  await add(1, { payer }, 'payer')
  const { payer: standing } = await store.standing(payer, undefined, 0)
  const until = new Date(standing.lastFaultAt! + 3_600_000).toISOString()
  await refusedWith(
    t,
    admit(context, payer, undefined),
    `refused: the account ${payer} is refused until ${until}: 5 of its submissions failed by its own doing in the last 3600 s (a payment or call that stopped working after it was accepted)`,
  )
  t.same(refusals, ['account_banned'])
})

t.test('an account whose payment reverted on chain is refused at once', async (t) => {
  let { context, refusals, add } = await setup(t)
  await add(1, { payer }, 'revert')
  await refusedWith(t, admit(context, payer, undefined), new RegExp(`^refused: the account ${payer} is refused until [0-9T:.Z-]+: a payment of its reverted on chain after it was accepted$`))
  t.same(refusals, ['account_banned'])
  ;({ context, refusals, add } = await setup(t))
  await add(2, { payer }, 'revert')
  await refusedWith(t, admit(context, payer, undefined), /: 2 payments of its reverted on chain after it was accepted$/)
})

t.test('a ban ends banSec after the latest fault; faults older than the window do not count', async (t) => {
  let { context, add } = await setup(t, { banSec: 0 })
  await add(5, { payer }, 'payer')
  await add(1, { payer }, 'revert')
  await clockMoves()
  await t.resolves(admit(context, payer, undefined), 'banSec 0: the ban is over as soon as it starts')
  ;({ context, add } = await setup(t, { windowSec: 0 }))
  await add(5, { payer }, 'payer')
  await add(1, { payer })
  await clockMoves()
  await t.resolves(admit(context, payer, undefined), 'windowSec 0: no fault is recent')
})

t.test('a client: its own limits, no ban for a revert, and judged only when named', async (t) => {
  let { context, refusals, add } = await setup(t)
  await add(63, { client })
  await t.resolves(admit(context, payer, client))
  await add(1, { client })
  await refusedWith(t, admit(context, payer, client), `refused: the client ${client} has 64 active submissions, the most it may have: wait for one to be done or failed`)
  t.same(refusals, ['client_busy'])
  await t.resolves(admit(context, payer, undefined), 'no client named: not judged')
  await t.resolves(admit(context, payer, '198.51.100.1'), 'another client')

  ;({ context, refusals, add } = await setup(t))
  await add(3, { client }, 'revert')
  await t.resolves(admit(context, payer, client), "a client's reverted payments are its payers' doing: not banned")
  await add(7, { client }, 'payer')
  await add(1, { client })
  await refusedWith(t, admit(context, payer, client), `refused: the client ${client} has 1 active submission, the most it may have while throttled (10 recent failures of its own doing): wait for one to be done or failed`)
  ;({ context, refusals, add } = await setup(t))
  await add(25, { client }, 'payer')
  await refusedWith(t, admit(context, payer, client), new RegExp(`^refused: the client ${client.replaceAll('.', '\\.')} is refused until .*: 25 of its submissions failed by its own doing in the last 3600 s`))
  t.same(refusals, ['client_banned'])
})

t.test('the account is judged before the client', async (t) => {
  const { context, refusals, add } = await setup(t)
  await add(8, { payer, client })
  await add(56, { client })
  await refusedWith(t, admit(context, payer, client), /^refused: the account /)
  t.same(refusals, ['account_busy'])
})
