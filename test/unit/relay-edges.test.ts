import { setImmediate as yieldOnce } from 'node:timers/promises'
import t, { type Test } from 'tap'
import { BaseError } from 'viem'
import { admit } from '../../core/relay/admission.ts'
import type { RelayContext } from '../../core/relay/context.ts'
import { revertReason } from '../../core/relay/revertReason.ts'
import { SqliteSubmissionStore } from '../../core/store/sqliteStore.ts'
import { ToolError } from '../../core/tool/tool.ts'
import { fakeClient, fakeNetwork, networkConfig } from './fakeChain.ts'

// Edges of the relay's admission and revert decoding that test/unit/admission.test.ts and
// revert-reason.test.ts leave open (each found by a surviving mutant, bench/MUTATION.md).

const payer = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'

async function storeWithFaults(t: Test, faults: number) {
  const store = new SqliteSubmissionStore(':memory:')
  t.teardown(() => store.close())
  const fence = await store.takeRunnerKey('unit')
  for (let index = 0; index < faults; index++) {
    const now = Date.now()
    await store.insert({ id: `f${index}`, chain: 'local', stage: 'waiting', createdAt: now, updatedAt: now, deadline: now, request: {} as never, identity: `f${index}`, payer })
    await store.update(`f${index}`, { stage: 'failed', fault: 'payer' }, fence)
  }
  const start = Date.now()
  while (Date.now() <= start) await yieldOnce()
  return store
}

function contextOf(store: SqliteSubmissionStore, admission: Record<string, unknown>, refused?: () => void): RelayContext {
  const base = networkConfig()
  const config = { ...base, relay: { ...base.relay, admission: { ...base.relay.admission, ...admission } } }
  return { network: fakeNetwork(fakeClient({}).client, config), store, ...(refused ? { refused } : {}) } as unknown as RelayContext
}

t.test('the window is in seconds: a fault a few milliseconds old is inside a 1-second window', async (t) => {
  const store = await storeWithFaults(t, 5)
  await t.rejects(admit(contextOf(store, { windowSec: 1 }), payer, undefined), /is refused until/)
})

t.test('without a metrics hook, a refusal is still the caller’s refusal', async (t) => {
  const store = await storeWithFaults(t, 5)
  await t.rejects(admit(contextOf(store, {}), payer, undefined), ToolError, 'banned')
  const busy = new SqliteSubmissionStore(':memory:')
  t.teardown(() => busy.close())
  for (let index = 0; index < 8; index++) {
    await busy.insert({ id: `a${index}`, chain: 'local', stage: 'waiting', createdAt: 1, updatedAt: 1, deadline: 1, request: {} as never, identity: `a${index}`, payer })
  }
  await t.rejects(admit(contextOf(busy, {}), payer, undefined), ToolError, 'busy')
})

t.test('revert data must be a hex string itself, not something that prints as one', async (t) => {
  t.equal(revertReason(Object.assign(new BaseError('an array'), { data: ['0xdeadbeef'] }), 6, 'USDC'), undefined)
})
