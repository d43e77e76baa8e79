import t from 'tap'
import { submissionStatus, submissionView } from '../../core/relay/status.ts'
import { SqliteSubmissionStore } from '../../core/store/sqliteStore.ts'
import type { SentTransaction, Submission } from '../../core/store/store.ts'

// A submission's public view (core/relay/status.ts): its stage, its transaction once signed, never
// the raw bytes; read back from a real SQLite store in memory.

const transaction: SentTransaction = {
  hash: `0x${'11'.repeat(32)}`,
  nonce: 7,
  raw: '0x02f8aa',
  maxFeePerGas: '2000000000',
  maxPriorityFeePerGas: '1000000',
  gas: '200000',
  callGas: '150000',
  sentAt: 2,
  firstSentAt: 1,
  hashes: [`0x${'11'.repeat(32)}`],
}
const waiting: Submission = {
  id: 'sub_1',
  chain: 'local',
  stage: 'waiting',
  createdAt: 1_000,
  updatedAt: 1_001,
  deadline: 1_600,
  request: { call: { to: '0x1111111111111111111111111111111111111111', data: '0x' } } as never,
  identity: 'identity',
  callGas: '150000',
  payer: '0x2222222222222222222222222222222222222222',
  client: '203.0.113.7',
}

t.test('submissionView: only the public fields, each when it is there', async (t) => {
  t.strictSame(submissionView(waiting), { id: 'sub_1', chain: 'local', stage: 'waiting', createdAt: 1_000, updatedAt: 1_001, deadline: 1_600 })
  t.strictSame(submissionView({ ...waiting, stage: 'confirming', transaction }), {
    id: 'sub_1',
    chain: 'local',
    stage: 'confirming',
    createdAt: 1_000,
    updatedAt: 1_001,
    deadline: 1_600,
    transaction: { hash: transaction.hash, nonce: 7 },
  })
  const outcome = { callSucceeded: false, reason: 'the call reverted: no' } as never
  t.strictSame(submissionView({ ...waiting, stage: 'done', transaction, blockNumber: '12', gasUsed: '90000', fee: '180000000000000', reason: 'why', outcome }), {
    id: 'sub_1',
    chain: 'local',
    stage: 'done',
    createdAt: 1_000,
    updatedAt: 1_001,
    deadline: 1_600,
    transaction: { hash: transaction.hash, nonce: 7, blockNumber: '12', gasUsed: '90000', feeWei: '180000000000000' },
    reason: 'why',
    outcome,
  })
  // a reason without a transaction (held, or failed before a send)
  t.strictSame(submissionView({ ...waiting, reason: 'held: the call reverts' }), { id: 'sub_1', chain: 'local', stage: 'waiting', createdAt: 1_000, updatedAt: 1_001, deadline: 1_600, reason: 'held: the call reverts' })
})

t.test('submissionStatus: the stored submission’s view, or nothing', async (t) => {
  const store = new SqliteSubmissionStore(':memory:')
  t.teardown(() => store.close())
  await store.insert(waiting)
  t.strictSame(await submissionStatus(store, 'sub_1'), submissionView(waiting))
  t.equal(await submissionStatus(store, 'sub_2'), undefined)
})
