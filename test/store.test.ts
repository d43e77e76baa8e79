import t from 'tap'
import type { SentTransaction, Submission } from '../core/store/store.ts'
import { storeKinds } from './fixtures/storeKinds.ts'

// Transactions stored before lanes name no key: they are the first lane's.
const FIRST_LANE = '0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65'

// One suite, every store: what the relay relies on must hold for SQLite and PostgreSQL alike.

const kinds = storeKinds('bruno-store-')

const USDC = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913'

function submission(id: string, chain: string, createdAt: number, overrides: Partial<Submission> = {}): Submission {
  return {
    id,
    chain,
    stage: 'waiting',
    createdAt,
    updatedAt: createdAt,
    deadline: Math.floor(createdAt / 1000) + 600,
    request: { call: { to: USDC, data: '0x70a08231', value: '0' }, payment: { token: USDC, amountBaseUnits: '1234', batch: '0xc3c16ee4' } },
    ...overrides,
  }
}

function transaction(nonce: number): SentTransaction {
  const hash = `0x${nonce.toString(16).padStart(64, '0')}` as const
  return { hash, nonce, raw: '0x02f8', maxFeePerGas: '2000000000', maxPriorityFeePerGas: '1000000', gas: '90000', callGas: '40000', sentAt: 1_760_000_000_123, firstSentAt: 1_760_000_000_123, hashes: [hash] }
}

for (const kind of kinds) {
  t.test(kind.name, { skip: kind.skip }, async (t) => {
    const place = await kind.place(t)
    const store = kind.open(place)
    t.teardown(() => store.close())
    // The runner's writes carry the fence it took its key with.
    const fence = await store.takeRunnerKey('bruno-runner:1:0xaa')

    t.test('ping answers', async (t) => {
      t.equal(await store.ping(), true)
    })

    t.test('insert then get returns the submission as stored; an unknown id is undefined', async (t) => {
      const stored = submission('get-1', 'base', 1_760_000_000_000, {
        request: {
          call: { to: USDC, data: '0xa9059cbb', value: '0' },
          authorizationList: [{ chainId: 8453, address: USDC, nonce: 3, yParity: 1, r: `0x${'1'.repeat(64)}`, s: `0x${'2'.repeat(64)}` }],
          payment: { token: USDC, amountBaseUnits: '5', batch: '0xc3c16ee400ff' },
        },
      })
      await store.insert(stored)
      t.same(await store.get('get-1'), stored)
      t.equal(await store.get('nope'), undefined)
    })

    t.test('a duplicate id is refused', async (t) => {
      await store.insert(submission('dup-1', 'base', 1_760_000_000_000))
      await t.rejects(store.insert(submission('dup-1', 'base', 1_760_000_000_001)))
    })

    t.test('active: the chain\'s unfinished submissions, oldest first, then by id', async (t) => {
      const chain = 'ordering'
      await store.insert(submission('b', chain, 2_000))
      await store.insert(submission('c', chain, 1_000))
      await store.insert(submission('a', chain, 2_000))
      await store.insert(submission('Z', chain, 2_000))
      await store.insert(submission('done', chain, 500, { stage: 'done' }))
      await store.insert(submission('failed', chain, 600, { stage: 'failed' }))
      await store.insert(submission('other-chain', 'elsewhere', 100))
      await store.insert(submission('sending', chain, 3_000))
      await store.update('sending', { stage: 'sending', transaction: transaction(7) }, fence)
      // Byte order: upper case sorts before lower case, whatever the database's locale.
      t.same((await store.active(chain)).map((s) => s.id), ['c', 'Z', 'a', 'b', 'sending'])
      await store.update('a', { stage: 'done' }, fence)
      t.same((await store.active(chain)).map((s) => s.id), ['c', 'Z', 'b', 'sending'])
    })

    t.test('update changes only what the patch names', async (t) => {
      const before = submission('upd-1', 'base', 1_000)
      await store.insert(before)
      await store.update('upd-1', { reason: 'the call reverted: ERC20: transfer amount exceeds balance' }, fence)
      const held = (await store.get('upd-1'))!
      t.equal(held.stage, 'waiting')
      t.equal(held.reason, 'the call reverted: ERC20: transfer amount exceeds balance')
      t.ok(held.updatedAt > before.updatedAt, 'updatedAt moves')
      const sent = transaction(42)
      await store.update('upd-1', { stage: 'sending', transaction: sent }, fence)
      await store.update('upd-1', { stage: 'done', blockNumber: '12345678901234567890', gasUsed: '61234', fee: '98765432109876543210' }, fence)
      const done = (await store.get('upd-1'))!
      t.same(done, {
        ...before,
        updatedAt: done.updatedAt,
        stage: 'done',
        reason: held.reason,
        transaction: sent,
        blockNumber: '12345678901234567890',
        gasUsed: '61234',
        fee: '98765432109876543210',
      })
    })

    t.test('highestNonce: per chain, the highest nonce of any stored transaction', async (t) => {
      t.equal(await store.highestNonce('nonces', FIRST_LANE, true), undefined, 'none before any transaction')
      await store.insert(submission('n1', 'nonces', 1))
      await store.insert(submission('n2', 'nonces', 2))
      await store.insert(submission('n3', 'nonces-other', 3))
      t.equal(await store.highestNonce('nonces', FIRST_LANE, true), undefined, 'a waiting submission has no nonce')
      await store.update('n1', { stage: 'sending', transaction: transaction(9) }, fence)
      await store.update('n2', { stage: 'sending', transaction: transaction(4) }, fence)
      await store.update('n3', { stage: 'sending', transaction: transaction(100) }, fence)
      t.equal(await store.highestNonce('nonces', FIRST_LANE, true), 9)
      await store.update('n1', { stage: 'done' }, fence)
      t.equal(await store.highestNonce('nonces', FIRST_LANE, true), 9, 'finished submissions still count: their nonces are spent')
      t.equal(await store.highestNonce('nonces-other', FIRST_LANE, true), 100)
    })

    t.test('a second store on the same place sees every acknowledged write at once', async (t) => {
      const other = kind.open(place)
      t.teardown(() => other.close())
      await store.insert(submission('shared-1', 'shared', 1))
      t.equal((await other.get('shared-1'))?.stage, 'waiting')
      await other.update('shared-1', { stage: 'sending', transaction: transaction(3) }, fence)
      t.same((await store.get('shared-1'))?.transaction, transaction(3))
      t.equal(await store.highestNonce('shared', FIRST_LANE, true), 3)
    })
  })

  t.test(`${kind.name}: acknowledged writes survive closing and reopening`, { skip: kind.skip }, async (t) => {
    const place = await kind.place(t)
    const first = kind.open(place)
    const fence = await first.takeRunnerKey('bruno-runner:1:0xaa')
    await first.insert(submission('durable-1', 'base', 1))
    await first.insert(submission('durable-2', 'base', 2))
    await first.update('durable-2', { stage: 'sending', transaction: transaction(11) }, fence)
    const expected = [await first.get('durable-1'), await first.get('durable-2')]
    await first.close()

    const reopened = kind.open(place)
    t.teardown(() => reopened.close())
    t.same([await reopened.get('durable-1'), await reopened.get('durable-2')], expected)
    t.same((await reopened.active('base')).map((s) => s.id), ['durable-1', 'durable-2'])
    t.equal(await reopened.highestNonce('base', FIRST_LANE, true), 11)
  })
}
