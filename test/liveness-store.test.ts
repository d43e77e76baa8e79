import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { SqliteSubmissionStore } from '../core/store/sqliteStore.ts'
import type { Stage } from '../core/relay/schemas.ts'
import type { SentTransaction, Submission } from '../core/store/store.ts'
import { offlineConfig, startBruno } from './fixtures/bruno.ts'
import { storeKinds } from './fixtures/storeKinds.ts'
import { waitFor } from './fixtures/waitFor.ts'

// Issue 13, "A relay no client can stop": the store forgets settled submissions after
// `relay.retentionSec` (`prune(before)`), never an active one; and it holds one active submission per
// payment identity (a unique partial index), so a client's retries and concurrent copies of one payment
// are one submission, and a new one is allowed once the first settled. SQLite and PostgreSQL alike; then
// through Bruno itself: a store file with old settled rows, served with retentionSec 60.

const kinds = storeKinds('bruno-liveness-')

const USDC = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913'
const HOUR = 3_600_000

function row(id: string, stage: Stage, updatedAt: number, identity?: string): Submission {
  return {
    id,
    chain: 'local',
    stage,
    createdAt: updatedAt - 1_000,
    updatedAt,
    deadline: Math.floor(updatedAt / 1000) + 600,
    request: { call: { to: USDC, data: '0x70a08231', value: '0' }, payment: { token: USDC, amountBaseUnits: '1234', batch: '0xc3c16ee4' } },
    ...(identity === undefined ? {} : { identity }),
  }
}

function sent(nonce: number): SentTransaction {
  const hash = `0x${nonce.toString(16).padStart(64, '0')}` as const
  return { hash, nonce, raw: '0x02f8', maxFeePerGas: '2000000000', maxPriorityFeePerGas: '1000000', gas: '90000', callGas: '40000', sentAt: 1, firstSentAt: 1, hashes: [hash] }
}

for (const kind of kinds) {
  t.test(`${kind.name}: prune and one active submission per payment identity`, { skip: kind.skip }, async (t) => {
    const place = await kind.place(t)
    const store = kind.open(place)
    t.teardown(() => store.close())
    // The runner's writes carry the fence it took its key with.
    const fence = await store.takeRunnerKey('bruno-runner:1:0xaa')

    t.test('prune(before): settled rows last changed before `before` are deleted; active ones of any age are kept', async (t) => {
      const now = Date.now()
      const before = now - HOUR
      await store.insert(row('old-done', 'done', before - 1))
      await store.insert(row('old-failed', 'failed', before - 10 * HOUR))
      await store.insert(row('at-limit-done', 'done', before))
      await store.insert(row('new-done', 'done', now))
      await store.insert(row('old-waiting', 'waiting', before - 10 * HOUR))
      // In flight for ten hours (an update would stamp them now: they are stored as they stand).
      await store.insert(row('old-sending', 'sending', before - 10 * HOUR))
      await store.insert(row('old-confirming', 'confirming', before - 10 * HOUR))
      const deleted = await store.prune(before, fence)
      t.equal(deleted, 2, 'it says how many it deleted')
      for (const id of ['old-done', 'old-failed']) t.equal(await store.get(id), undefined, `${id}: deleted`)
      for (const id of ['at-limit-done', 'new-done', 'old-waiting', 'old-sending', 'old-confirming']) t.ok(await store.get(id), `${id}: kept`)
      t.same((await store.active('local')).map((submission) => submission.id).sort(), ['old-confirming', 'old-sending', 'old-waiting'], 'the active ones are all still active')
      t.equal(await store.prune(before, fence), 0, 'a second prune finds nothing more')
      // Everything settled, however recent, goes with a `before` in the future; active ones still stay.
      t.equal(await store.prune(now + HOUR, fence), 2, 'at-limit-done and new-done')
      t.equal((await store.active('local')).length, 3, 'the three active ones remain')
    })

    t.test('activeByIdentity and the unique index: a second active submission of one identity returns the first; a new one is allowed once it settled', async (t) => {
      const identity = `3009:local:${USDC}:0x0000000000000000000000000000000000000001:0x${'ab'.repeat(32)}`
      const now = Date.now()
      t.equal(await store.activeByIdentity(identity), undefined, 'none yet')
      const first = await store.insert(row('id-first', 'waiting', now, identity))
      t.equal(first.id, 'id-first', 'the first is stored')
      t.equal((await store.activeByIdentity(identity))?.id, 'id-first', 'activeByIdentity finds it')

      for (const stage of ['waiting', 'sending', 'confirming'] as const) {
        if (stage !== 'waiting') await store.update('id-first', { stage, transaction: sent(5) }, fence)
        const again = await store.insert(row(`id-again-${stage}`, 'waiting', now + 1, identity))
        t.equal(again.id, 'id-first', `while the first is ${stage}, a second insert returns the first`)
        t.equal(await store.get(`id-again-${stage}`), undefined, `and stores nothing (${stage})`)
      }

      // Concurrent copies, as 20 clients submitting one payment at once: one row.
      const copies = await Promise.all(Array.from({ length: 20 }, (_, index) => store.insert(row(`id-copy-${index}`, 'waiting', now + 2, identity))))
      t.same([...new Set(copies.map((copy) => copy.id))], ['id-first'], '20 concurrent inserts all return the first')

      // Another store on the same place (another process, another replica): the index is the database's.
      const other = kind.open(place)
      t.teardown(() => other.close())
      t.equal((await other.insert(row('id-elsewhere', 'waiting', now + 3, identity))).id, 'id-first', 'a second store on the same place returns the first too')

      await store.update('id-first', { stage: 'done', blockNumber: '9' }, fence)
      t.equal(await store.activeByIdentity(identity), undefined, 'once done, the identity has no active submission')
      const next = await store.insert(row('id-next', 'waiting', now + 4, identity))
      t.equal(next.id, 'id-next', 'a new submission of the identity is allowed after the first is done')
      t.equal((await store.activeByIdentity(identity))?.id, 'id-next', 'activeByIdentity finds the new one')
      t.equal((await store.insert(row('id-next-again', 'waiting', now + 5, identity))).id, 'id-next', 'and it is the one a further copy returns')

      await store.update('id-next', { stage: 'failed', reason: 'the node refused the transaction: exceeds block gas limit' }, fence)
      t.equal(await store.activeByIdentity(identity), undefined, 'once failed, none either')
      t.equal((await store.insert(row('id-third', 'waiting', now + 6, identity))).id, 'id-third', 'and a third may follow a failed one')

      // Submissions without an identity do not conflict with each other.
      await store.insert(row('no-identity-1', 'waiting', now))
      await store.insert(row('no-identity-2', 'waiting', now))
      t.ok((await store.get('no-identity-1')) && (await store.get('no-identity-2')), 'two active submissions without an identity both stored')
    })
  })
}

t.test('through Bruno: with relay.retentionSec 60, settled submissions older than that are gone from status; recent and active ones stay', async (t) => {
  const path = join(mkdtempSync(join(tmpdir(), 'bruno-retention-')), 'bruno.sqlite')
  const now = Date.now()
  const seed = new SqliteSubmissionStore(path)
  await seed.insert(row('settled-2h-ago', 'done', now - 2 * HOUR))
  await seed.insert(row('failed-61s-ago', 'failed', now - 61_000))
  await seed.insert(row('failed-30s-ago', 'failed', now - 30_000))
  // Active and old: its deadline passed long ago; the runner (which cannot reach this config's chain) leaves it be.
  await seed.insert({ ...row('waiting-2h-ago', 'waiting', now - 2 * HOUR), deadline: Math.floor((now - 2 * HOUR) / 1000) })
  await seed.close()

  const env = { ...process.env }
  const base = offlineConfig(env)
  const config = {
    ...base,
    groups: ['bruno' as const],
    store: { kind: 'sqlite' as const, path },
    networks: base.networks.map((network) => ({ ...network, relay: { ...network.relay, retentionSec: 60 } })),
  }
  t.equal(config.networks[0]!.relay.retentionSec, 60, 'relay.retentionSec is 60 s')
  const bruno = await startBruno(t, config, env)
  const statusCode = async (id: string) => (await fetch(`${bruno.server.url}/v1/status/${id}`)).status
  // The runner prunes on its first pass, then at most once a minute.
  await waitFor(() => statusCode('settled-2h-ago'), (code) => code === 404, 'the 2-hour-old settled submission pruned')
  t.equal(await statusCode('settled-2h-ago'), 404, 'settled 2 h ago: unknown')
  const failed = await fetch(`${bruno.server.url}/v1/status/failed-61s-ago`)
  t.equal(failed.status, 404, 'failed 61 s ago, retention 60 s: unknown')
  t.match(((await failed.json()) as { error: { message: string } }).error.message, 'unknown submission id "failed-61s-ago"', 'REST says the id is unknown')
  t.equal(await statusCode('failed-30s-ago'), 200, 'failed 30 s ago: kept')
  t.equal(await statusCode('waiting-2h-ago'), 200, 'active, however old: kept')
})
