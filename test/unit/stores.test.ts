import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import t from 'tap'
import { SqliteSubmissionStore } from '../../core/store/sqliteStore.ts'
import { ActiveCapReached, AlreadySpent, PaymentIdTaken, StaleEpochError, type SentTransaction, type Submission, type SubmissionStore } from '../../core/store/store.ts'
import { storeKinds } from '../fixtures/storeKinds.ts'

// Transactions stored before lanes name no key: they are the first lane's.
const FIRST_LANE = '0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65'

// Both stores (core/store/sqliteStore.ts, postgresStore.ts) on what test/store.test.ts leaves
// out: a party's standing, the fence's refusals and their numbers, highestNonce's rules, every
// patch field, the answers' types (numbers, not PostgreSQL's BIGINT strings); then SQLite's own
// (a file made before the payment-first columns, WAL, its folder). PostgreSQL runs only under
// .ci/with-postgres (or fails when BRUNO_TEST_PG_REQUIRED is set without it).

const TOKEN = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913'

function submission(id: string, overrides: Partial<Submission> = {}): Submission {
  return {
    id,
    chain: 'base',
    stage: 'waiting',
    createdAt: 1_760_000_000_000,
    updatedAt: 1_760_000_000_000,
    deadline: 1_760_000_600,
    request: { call: { to: TOKEN, data: '0x70a08231', value: '0' }, payment: { token: TOKEN, amountBaseUnits: '1234', batch: '0xc3c16ee4' } },
    ...overrides,
  }
}

function sent(nonce: number): SentTransaction {
  const hash = `0x${nonce.toString(16).padStart(64, '0')}` as const
  return { hash, nonce, raw: '0x02f8', maxFeePerGas: '2000000000', maxPriorityFeePerGas: '1000000', gas: '90000', callGas: '40000', sentAt: 1_760_000_000_123, firstSentAt: 1_760_000_000_100, hashes: [hash] }
}

for (const kind of storeKinds('bruno-unit-stores-')) {
  t.test(kind.name, { skip: kind.skip }, async (t) => {
    const place = await kind.place(t)
    const store: SubmissionStore = kind.open(place)
    t.teardown(() => store.close())
    const key = 'bruno-runner:8453:0xaa'

    t.test('takeRunnerKey and runnerEpoch answer numbers: 0 before the first take, then one more each take', async (t) => {
      t.strictSame(await store.runnerEpoch(key), 0)
      t.strictSame(await store.takeRunnerKey(key), { key, epoch: 1 })
      t.strictSame(await store.takeRunnerKey(key), { key, epoch: 2 })
      t.strictSame(await store.runnerEpoch(key), 2)
      t.strictSame(await store.takeRunnerKey('bruno-runner:10:0xaa'), { key: 'bruno-runner:10:0xaa', epoch: 1 }, 'each key its own epoch')
      t.strictSame(await store.runnerEpoch(key), 2)
      t.equal(await store.ping(), true)
    })

    t.test('a closed store answers nothing more', async (t) => {
      const other = kind.open(place)
      t.equal(await other.ping(), true)
      await other.close()
      await t.rejects(other.ping(), 'closed')
      await t.rejects(other.get('x'), 'closed')
      t.equal(await store.ping(), true, 'another store on the same place is unaffected')
    })

    t.test('update writes every field a patch names, and clears what null clears', async (t) => {
      const fence = await store.takeRunnerKey('bruno-runner:1:0xpatch')
      await store.insert(submission('patch-1', { callGas: '40000', refundGas: '7023', identity: 'id-patch', payer: '0xpayer', client: '10.0.0.9' }))
      const before = Date.now()
      await store.update(
        'patch-1',
        { stage: 'done', transaction: sent(3), blockNumber: '12', gasUsed: '51000', fee: '77', reason: 'held a while', outcome: { paidBaseUnits: '1234', callSucceeded: false, callReason: 'nope' }, fault: 'revert' },
        fence,
      )
      const after = Date.now()
      const stored = (await store.get('patch-1'))!
      const { updatedAt, ...rest } = stored
      t.ok(updatedAt >= before && updatedAt <= after, 'updatedAt stamped now')
      t.strictSame(rest, {
        ...(({ updatedAt: _, ...s }) => s)(submission('patch-1', { callGas: '40000', refundGas: '7023', identity: 'id-patch', payer: '0xpayer', client: '10.0.0.9' })),
        stage: 'done',
        transaction: sent(3),
        blockNumber: '12',
        gasUsed: '51000',
        fee: '77',
        reason: 'held a while',
        outcome: { paidBaseUnits: '1234', callSucceeded: false, callReason: 'nope' },
        fault: 'revert',
      })
      await store.update('patch-1', { transaction: null, reason: null }, fence)
      const cleared = (await store.get('patch-1'))!
      t.equal(cleared.transaction, undefined)
      t.equal(cleared.reason, undefined)
      t.equal(cleared.fee, '77', 'the rest kept')
    })

    t.test('a stale fence is refused with the key\'s epoch, and changes nothing', async (t) => {
      const name = 'bruno-runner:1:0xstale'
      const old = await store.takeRunnerKey(name)
      await store.insert(submission('stale-1'))
      await store.insert(submission('stale-done', { stage: 'done', updatedAt: 1_000 }))
      const current = await store.takeRunnerKey(name)
      t.strictSame(current, { key: name, epoch: old.epoch + 1 })
      const refused = (await store.update('stale-1', { stage: 'sending' }, old).then(
        () => undefined,
        (error: unknown) => error,
      )) as StaleEpochError
      t.ok(refused instanceof StaleEpochError)
      t.strictSame(refused.current, current.epoch)
      t.strictSame(refused.fence, old)
      t.equal(refused.message, `runner key ${name} is at epoch ${current.epoch}: a write at epoch ${old.epoch} is refused`)
      t.equal((await store.get('stale-1'))!.stage, 'waiting', 'not written')
      await t.rejects(store.prune(2_000, old), StaleEpochError)
      t.ok(await store.get('stale-done'), 'not pruned')
      // A key never taken is at epoch 0: a fence claiming 1 is refused, naming 0.
      const never = (await store.update('stale-1', { stage: 'sending' }, { key: 'bruno-runner:never', epoch: 1 }).then(
        () => undefined,
        (error: unknown) => error,
      )) as StaleEpochError
      t.ok(never instanceof StaleEpochError)
      t.strictSame(never.current, 0)
      t.strictSame(await store.prune(2_000, current), 1, 'the current fence prunes: a number')
      t.equal(await store.get('stale-done'), undefined)
      t.strictSame(await store.prune(2_000, current), 0)
      await store.update('stale-1', { stage: 'sending' }, current)
      t.equal((await store.get('stale-1'))!.stage, 'sending', 'the current fence writes')
    })

    t.test('highestNonce: a number; a failure without a block holds no nonce, one with a block does', async (t) => {
      const fence = await store.takeRunnerKey('bruno-runner:1:0xnonce')
      const chain = 'nonces'
      t.equal(await store.highestNonce(chain, FIRST_LANE, true), undefined)
      await store.insert(submission('n-1', { chain }))
      t.equal(await store.highestNonce(chain, FIRST_LANE, true), undefined, 'no transaction yet')
      await store.update('n-1', { stage: 'sending', transaction: sent(5) }, fence)
      t.strictSame(await store.highestNonce(chain, FIRST_LANE, true), 5)
      await store.insert(submission('n-2', { chain }))
      await store.update('n-2', { stage: 'failed', transaction: sent(9), reason: 'refused' }, fence)
      t.strictSame(await store.highestNonce(chain, FIRST_LANE, true), 5, 'failed unsent: its nonce is free')
      await store.insert(submission('n-3', { chain }))
      await store.update('n-3', { stage: 'failed', transaction: sent(8), blockNumber: '100', reason: 'reverted' }, fence)
      t.strictSame(await store.highestNonce(chain, FIRST_LANE, true), 8, 'failed in a block: its nonce is used')
      await store.insert(submission('n-4', { chain: 'other-nonces' }))
      await store.update('n-4', { stage: 'confirming', transaction: sent(40) }, fence)
      t.strictSame(await store.highestNonce(chain, FIRST_LANE, true), 8, 'another chain\'s nonces do not count')
      await store.update('n-1', { stage: 'done', blockNumber: '101' }, fence)
      t.strictSame(await store.highestNonce(chain, FIRST_LANE, true), 8)
      t.strictSame(await store.highestNonce('other-nonces', FIRST_LANE, true), 40)
    })

    t.test('lanes: highestNonce per key (the first lane also counts transactions that name none); claim sends only a waiting submission whose payer has none in flight', async (t) => {
      const fence = await store.takeRunnerKey('bruno-runner:1:0xlanes')
      const chain = 'lanes'
      const other = '0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc'
      const from = (nonce: number, lane: `0x${string}`): SentTransaction => ({ ...sent(nonce), from: lane })
      await store.insert(submission('l-old', { chain, payer: '0x01' }))
      await store.update('l-old', { stage: 'sending', transaction: sent(3) }, fence)
      await store.insert(submission('l-1', { chain, payer: '0x02' }))
      t.equal(await store.claim('l-1', { stage: 'sending', transaction: from(7, other), reason: null }, fence), true, 'a waiting submission is claimed')
      t.strictSame([await store.highestNonce(chain, FIRST_LANE, true), await store.highestNonce(chain, other, false)], [3, 7], 'each lane its own nonces')
      t.equal(await store.highestNonce(chain, FIRST_LANE, false), undefined, 'not the first lane: what names no key is not its')
      t.equal((await store.get('l-1'))!.transaction!.from, other)
      t.equal(await store.claim('l-1', { stage: 'sending', transaction: from(8, FIRST_LANE) }, fence), false, 'sent already: no second claim')
      t.equal((await store.get('l-1'))!.transaction!.nonce, 7, 'and nothing changed')
      await store.insert(submission('l-2', { chain, payer: '0x02' }))
      t.equal(await store.claim('l-2', { stage: 'sending', transaction: from(4, FIRST_LANE) }, fence), false, 'its payer has one in flight on another lane')
      t.equal((await store.get('l-2'))!.stage, 'waiting')
      await store.update('l-1', { stage: 'done', blockNumber: '9' }, fence)
      t.equal(await store.claim('l-2', { stage: 'sending', transaction: from(4, FIRST_LANE) }, fence), true, 'that one done: this one goes')
      await store.update('l-2', { stage: 'waiting', transaction: null }, fence)
      t.equal((await store.get('l-2'))!.transaction, undefined, 'given back: no transaction, no lane')
      t.equal(await store.highestNonce(chain, FIRST_LANE, true), 3)
      const stale = { ...fence, epoch: fence.epoch - 1 }
      await t.rejects(store.claim('l-2', { stage: 'sending', transaction: from(4, FIRST_LANE) }, stale), StaleEpochError, 'fenced like update')
    })

    // Issue 44, point 2: on PostgreSQL, under READ COMMITTED, two claims of one payer's submissions
    // see neither's uncommitted send; only the lock on the payer orders them. Keyed by the
    // submission instead, 2–8 of 8 concurrent claims went through.
    t.test('claim: eight concurrent claims of one payer\'s eight waiting submissions send exactly one', async (t) => {
      const fence = await store.takeRunnerKey('bruno-runner:1:0xconcurrent')
      const chain = 'concurrent-claims'
      // PostgreSQL's pool opens its connections first, so that the claims below run at once rather
      // than one by one as each connection comes up. Five rounds, each for another payer.
      await Promise.all(Array.from({ length: 10 }, () => store.ping()))
      for (let round = 0; round < 5; round++) {
        const payer = `0x${round.toString(16).padStart(40, 'c')}`
        const ids = Array.from({ length: 8 }, (_, index) => `cc-${round}-${index}`)
        for (const id of ids) await store.insert(submission(id, { chain, payer }))
        const claimed = await Promise.all(ids.map((id, index) => store.claim(id, { stage: 'sending', transaction: sent(100 + round * 8 + index) }, fence)))
        t.equal(claimed.filter(Boolean).length, 1, `round ${round}: one claim of ${claimed.length} went through`)
        const stages = await Promise.all(ids.map(async (id) => (await store.get(id))!.stage))
        t.same([stages.filter((stage) => stage === 'sending').length, stages.filter((stage) => stage === 'waiting').length], [1, 7], 'one in flight for the payer, the others waiting')
      }
    })

    t.test('standing: active submissions, faults and reverts since `since`, the last fault\'s time', async (t) => {
      const fence = await store.takeRunnerKey('bruno-runner:1:0xstanding')
      const payer = '0xstandingpayer'
      const client = '10.1.1.1'
      t.strictSame(await store.standing(payer, client, 0), { payer: { active: 0, faults: 0, reverts: 0 }, client: { active: 0, faults: 0, reverts: 0 } }, 'nothing yet')
      t.strictSame(await store.standing(payer, undefined, 0), { payer: { active: 0, faults: 0, reverts: 0 } }, 'no client asked: none answered')
      await store.insert(submission('s-wait', { payer, client }))
      await store.insert(submission('s-send', { payer }))
      await store.insert(submission('s-conf', { payer, client: '10.2.2.2' }))
      await store.insert(submission('s-done', { payer, client }))
      await store.insert(submission('s-other', { payer: '0xsomeoneelse', client }))
      await store.update('s-send', { stage: 'sending' }, fence)
      await store.update('s-conf', { stage: 'confirming' }, fence)
      await store.update('s-done', { stage: 'done' }, fence)
      t.strictSame(await store.standing(payer, client, 0), { payer: { active: 3, faults: 0, reverts: 0 }, client: { active: 2, faults: 0, reverts: 0 } })

      await store.insert(submission('s-payerfault', { payer, client }))
      await store.update('s-payerfault', { stage: 'failed', fault: 'payer', reason: 'payment gone' }, fence)
      await store.insert(submission('s-revert', { payer }))
      await store.update('s-revert', { stage: 'failed', fault: 'revert', reason: 'reverted' }, fence)
      await store.insert(submission('s-plainfail', { payer, client }))
      await store.update('s-plainfail', { stage: 'failed', reason: 'expired' }, fence)
      const payerFault = (await store.get('s-payerfault'))!.updatedAt
      const revert = (await store.get('s-revert'))!.updatedAt
      const last = Math.max(payerFault, revert)
      t.strictSame(await store.standing(payer, client, 0), {
        payer: { active: 3, faults: 2, reverts: 1, lastFaultAt: last },
        client: { active: 2, faults: 1, reverts: 0, lastFaultAt: payerFault },
      })
      t.strictSame(
        await store.standing(payer, client, revert),
        { payer: { active: 3, faults: payerFault >= revert ? 2 : 1, reverts: 1, lastFaultAt: last }, client: { active: 2, faults: payerFault >= revert ? 1 : 0, reverts: 0, lastFaultAt: payerFault } },
        'since is inclusive: a fault at `since` counts',
      )
      t.strictSame(
        await store.standing(payer, client, last + 1),
        { payer: { active: 3, faults: 0, reverts: 0, lastFaultAt: last }, client: { active: 2, faults: 0, reverts: 0, lastFaultAt: payerFault } },
        'faults before since are not counted, but the last one is still told',
      )
      t.strictSame(await store.standing('0xsomeoneelse', undefined, 0), { payer: { active: 1, faults: 0, reverts: 0 } })
    })

    t.test('insert with caps: concurrent inserts store up to the payer\'s and the client\'s cap, the rest refused and not stored', async (t) => {
      const fence = await store.takeRunnerKey('bruno-runner:1:0xcaps')
      const caps = { payer: 8, client: 64 }
      const insertAll = (submissions: Submission[]) => Promise.allSettled(submissions.map((one) => store.insert(one, caps)))
      const byPayer = await insertAll(Array.from({ length: 40 }, (_, index) => submission(`cap-p-${index}`, { identity: `cap-p-${index}`, payer: '0xcapped', client: `cap-p-client-${index}` })))
      const stored = byPayer.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value] : []))
      const refused = byPayer.flatMap((outcome) => (outcome.status === 'rejected' ? [outcome.reason] : []))
      t.equal(stored.length, 8, 'one payer: 8 of 40 stored')
      t.ok(refused.every((reason) => reason instanceof ActiveCapReached && reason.party === 'payer' && reason.active === 8), 'the rest refused at the payer\'s 8')
      t.equal((await store.standing('0xcapped', undefined, 0)).payer.active, 8, 'and not stored')
      const again = await store.insert(submission('cap-p-again', { identity: stored[0]!.identity!, payer: '0xcapped' }), caps)
      t.equal(again.id, stored[0]!.id, 'at its cap, the same payment again still answers the active one')
      await store.update(stored[0]!.id, { stage: 'done' }, fence)
      t.equal((await store.insert(submission('cap-p-next', { identity: 'cap-p-next', payer: '0xcapped' }), caps)).id, 'cap-p-next', 'a settled one frees a place')

      const byClient = await insertAll(Array.from({ length: 120 }, (_, index) => submission(`cap-c-${index}`, { identity: `cap-c-${index}`, payer: `0xcap-c-payer-${index}`, client: 'cap-client' })))
      t.equal(byClient.filter((outcome) => outcome.status === 'fulfilled').length, 64, 'one client over 120 payers: 64 stored')
      t.ok(byClient.every((outcome) => outcome.status === 'fulfilled' || (outcome.reason instanceof ActiveCapReached && outcome.reason.party === 'client' && outcome.reason.active === 64)))
      t.equal((await store.standing('0xnobody', 'cap-client', 0)).client?.active, 64)
      t.equal((await store.insert(submission('cap-uncapped', { identity: 'cap-uncapped', payer: '0xcapped', client: 'cap-client' }))).id, 'cap-uncapped', 'without caps, nothing is counted')
    })

    t.test('insert: the same payment again answers the active one; a used id is refused', async (t) => {
      const fence = await store.takeRunnerKey('bruno-runner:1:0xinsert')
      const first = submission('i-1', { identity: 'pay-i', payer: '0xp', client: 'c', callGas: '21000' })
      t.strictSame(await store.insert(first), first)
      t.strictSame(await store.insert(submission('i-2', { identity: 'pay-i', chain: 'elsewhere' })), first)
      t.equal(await store.get('i-2'), undefined)
      t.strictSame(await store.activeByIdentity('pay-i'), first)
      await store.update('i-1', { stage: 'done' }, fence)
      t.equal(await store.activeByIdentity('pay-i'), undefined, 'settled: no longer active')
      const next = submission('i-3', { identity: 'pay-i' })
      t.strictSame(await store.insert(next), next, 'a new one once the first settled')
      await t.rejects(store.insert(submission('i-3')), 'the same id again')
      await t.rejects(store.insert(submission('i-3', { identity: 'pay-other' })), 'the same id with another payment')
      t.strictSame(await store.get('i-3'), next, 'the first kept')
      t.equal(await store.activeByIdentity('pay-other'), undefined)
      t.equal((await store.doneByIdentity('pay-i'))?.id, 'i-1', 'the one done with it')
      t.equal(await store.doneByIdentity('pay-other'), undefined)
      await store.update('i-3', { stage: 'failed' }, fence)
      t.equal((await store.doneByIdentity('pay-i'))?.id, 'i-1', 'a failed one is no answer')
    })

    t.test('what a call spends: one active submission each, whatever pays; the same payment again still answers itself', async (t) => {
      const fence = await store.takeRunnerKey('bruno-runner:1:0xspends')
      const first = submission('sp-1', { identity: '3009:pay-a', callSpends: 'calibur:base:0xacc:7' })
      t.strictSame(await store.insert(first), first)
      const other = await store.insert(submission('sp-2', { identity: '3009:pay-b', callSpends: 'calibur:base:0xacc:7' })).catch((error: unknown) => error)
      t.ok(other instanceof AlreadySpent && other.spent === 'calibur:base:0xacc:7' && other.holder === 'sp-1', 'another payment for the same batch: AlreadySpent, naming the holder')
      t.equal(await store.get('sp-2'), undefined, 'not stored')
      t.strictSame(await store.insert(submission('sp-1b', { identity: '3009:pay-a', callSpends: 'calibur:base:0xacc:7' })), first, 'the same payment again answers the first')
      const asPayment = await store.insert(submission('sp-3', { identity: 'calibur:base:0xacc:7' })).catch((error: unknown) => error)
      t.ok(asPayment instanceof AlreadySpent && asPayment.holder === 'sp-1', 'a payment that spends what an active call spends')
      const callOfPayment = await store.insert(submission('sp-4', { identity: '3009:pay-c', callSpends: '3009:pay-a' })).catch((error: unknown) => error)
      t.ok(callOfPayment instanceof AlreadySpent && callOfPayment.holder === 'sp-1', 'a call that spends what an active payment spends')
      await store.update('sp-1', { stage: 'done' }, fence)
      const after = submission('sp-5', { identity: '3009:pay-d', callSpends: 'calibur:base:0xacc:7' })
      t.strictSame(await store.insert(after), after, 'once the holder settled, the store no longer stands in the way (the chain does)')
      const concurrent = await Promise.allSettled(Array.from({ length: 6 }, (_, index) => store.insert(submission(`sp-c-${index}`, { identity: `3009:pay-c-${index}`, callSpends: 'calibur:base:0xacc:9' }))))
      t.equal(concurrent.filter((outcome) => outcome.status === 'fulfilled').length, 1, 'six payments racing for one batch: one stored')
      t.ok(concurrent.every((outcome) => outcome.status === 'fulfilled' || outcome.reason instanceof AlreadySpent), 'the others refused as spent')
    })

    t.test('payment ids: one submission per chain each, found by it; another payment under a taken id is refused, untouched', async (t) => {
      const first = submission('pid-1', { identity: 'pay-pid-1', paymentId: 'pay_0123456789abcdef' })
      t.strictSame(await store.insert(first), first)
      t.strictSame(await store.byPaymentId('base', 'pay_0123456789abcdef'), first)
      t.equal(await store.byPaymentId('elsewhere', 'pay_0123456789abcdef'), undefined, 'per chain')
      const taken = await store.insert(submission('pid-2', { identity: 'pay-pid-2', paymentId: 'pay_0123456789abcdef' })).catch((error: unknown) => error)
      t.ok(taken instanceof PaymentIdTaken && taken.paymentId === 'pay_0123456789abcdef', 'another payment under the id: PaymentIdTaken')
      t.equal(await store.get('pid-2'), undefined, 'not stored')
      t.strictSame(await store.insert(submission('pid-1b', { identity: 'pay-pid-1', paymentId: 'pay_0123456789abcdef' })), first, 'the same payment again answers the first')
      const elsewhere = submission('pid-3', { chain: 'elsewhere', identity: 'pay-pid-3', paymentId: 'pay_0123456789abcdef' })
      t.strictSame(await store.insert(elsewhere), elsewhere, 'the same id on another chain is another key')
      const concurrent = await Promise.allSettled(Array.from({ length: 8 }, (_, index) => store.insert(submission(`pid-c-${index}`, { identity: `pay-pid-c-${index}`, paymentId: 'pay_concurrent_0001' }))))
      t.equal(concurrent.filter((outcome) => outcome.status === 'fulfilled').length, 1, 'eight payments racing for one id: one stored')
      t.ok(concurrent.every((outcome) => outcome.status === 'fulfilled' || outcome.reason instanceof PaymentIdTaken), 'the others refused as taken')
    })
  })
}

t.test('sqlite: what each refusal of insert says', async (t) => {
  const store = new SqliteSubmissionStore(':memory:')
  t.teardown(() => store.close())
  await store.insert(submission('x'))
  await t.rejects(store.insert(submission('x')), new Error('submission x already exists'))
  await t.rejects(store.insert(submission('x', { identity: 'fresh' })), new Error('submission x already exists'))
})

t.test('sqlite: a file made before the payment-first columns gains them, and their indexes', async (t) => {
  const path = join(mkdtempSync(join(tmpdir(), 'bruno-unit-old-')), 'bruno.sqlite')
  const old = new Database(path)
  old.exec(`CREATE TABLE submissions (
    id TEXT PRIMARY KEY, chain TEXT NOT NULL, stage TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
    deadline INTEGER NOT NULL, request TEXT NOT NULL, tx TEXT, tx_nonce INTEGER, block_number TEXT, gas_used TEXT, fee TEXT, reason TEXT)`)
  old.prepare('INSERT INTO submissions (id, chain, stage, created_at, updated_at, deadline, request) VALUES (?, ?, ?, ?, ?, ?, ?)').run(
    'legacy',
    'base',
    'waiting',
    1_000,
    1_000,
    2,
    JSON.stringify(submission('legacy').request),
  )
  old.close()
  const store = new SqliteSubmissionStore(path)
  t.teardown(() => store.close())
  t.strictSame(await store.get('legacy'), submission('legacy', { createdAt: 1_000, updatedAt: 1_000, deadline: 2 }), 'the old row as it was')
  const fresh = submission('fresh', { identity: 'pay-1', payer: '0xp', client: 'c', callGas: '50000', refundGas: '7023' })
  await store.insert(fresh)
  t.strictSame(await store.get('fresh'), fresh)
  const fence = await store.takeRunnerKey('k')
  await store.update('fresh', { stage: 'done', fault: 'payer', outcome: { paidBaseUnits: '1', callSucceeded: true } }, fence)
  t.equal((await store.get('fresh'))!.fault, 'payer')
  const check = new Database(path, { readonly: true })
  t.teardown(() => check.close())
  const columns = check.prepare<[], { name: string }>('PRAGMA table_info(submissions)').all().map((c) => c.name)
  t.strictSame(columns.slice(-10), ['outcome', 'call_gas', 'identity', 'payer', 'client', 'fault', 'payment_id', 'call_spends', 'refund_gas', 'lane'])
  const indexes = check.prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'submissions_%' ORDER BY name").all().map((i) => i.name)
  t.strictSame(indexes, ['submissions_active', 'submissions_active_call_spends', 'submissions_active_identity', 'submissions_client', 'submissions_done_identity', 'submissions_payer', 'submissions_payment_id', 'submissions_settled'])
})

t.test('sqlite: a new file in a folder made for it, in WAL mode, reopened as it was', async (t) => {
  const path = join(mkdtempSync(join(tmpdir(), 'bruno-unit-wal-')), 'x', 'y', 'bruno.sqlite')
  const store = new SqliteSubmissionStore(path)
  await store.insert(submission('kept'))
  const check = new Database(path, { readonly: true })
  t.equal(check.pragma('journal_mode', { simple: true }), 'wal')
  check.close()
  await store.close()
  await t.rejects(store.ping(), 'closed')
  const again = new SqliteSubmissionStore(path)
  t.teardown(() => again.close())
  t.strictSame(await again.get('kept'), submission('kept'))
  const columns = new Database(path, { readonly: true })
  t.teardown(() => columns.close())
  t.strictSame(
    columns.prepare<[], { name: string }>('PRAGMA table_info(submissions)').all().map((c) => c.name),
    ['id', 'chain', 'stage', 'created_at', 'updated_at', 'deadline', 'request', 'tx', 'tx_nonce', 'block_number', 'gas_used', 'fee', 'reason', 'outcome', 'call_gas', 'identity', 'payer', 'client', 'fault', 'payment_id', 'call_spends', 'refund_gas', 'lane'],
  )
})
