import t from 'tap'
import { fromRow, patchColumns, type SubmissionRow } from '../../core/store/storeRow.ts'
import type { SentTransaction } from '../../core/store/store.ts'

// The row mapping both stores share (core/store/storeRow.ts): every column to its field and back.

const transaction: SentTransaction = {
  hash: `0x${'11'.repeat(32)}`,
  nonce: 7,
  raw: '0x02f8',
  maxFeePerGas: '2000000000',
  maxPriorityFeePerGas: '1000000',
  gas: '200000',
  callGas: '150000',
  sentAt: 1_700_000_000_500,
  firstSentAt: 1_700_000_000_000,
  hashes: [`0x${'11'.repeat(32)}`],
}
const request = { chain: 'local', call: { to: '0x1111111111111111111111111111111111111111', data: '0x' } }
const outcome = { callSucceeded: false, reason: 'the call reverted: nope' }

const bare: SubmissionRow = {
  id: 'sub_1',
  chain: 'local',
  stage: 'waiting',
  created_at: 1_700_000_000_000,
  updated_at: '1700000000001',
  deadline: '1700000600',
  request: JSON.stringify(request),
  identity: null,
  call_gas: null,
  refund_gas: null,
  payer: null,
  client: null,
    payment_id: null,
    call_spends: null,
  fault: null,
  tx: null,
  block_number: null,
  gas_used: null,
  fee: null,
  reason: null,
  outcome: null,
}

t.test('fromRow: a bare row has only the required fields; BIGINT strings are read as numbers', async (t) => {
  const submission = fromRow(bare)
  t.strictSame(submission, { id: 'sub_1', chain: 'local', stage: 'waiting', createdAt: 1_700_000_000_000, updatedAt: 1_700_000_000_001, deadline: 1_700_000_600, request })
  t.same(Object.keys(submission), ['id', 'chain', 'stage', 'createdAt', 'updatedAt', 'deadline', 'request'], 'no optional key present, not even as undefined')
})

t.test('fromRow: every optional column to its field', async (t) => {
  const full: SubmissionRow = {
    ...bare,
    stage: 'done',
    identity: 'calibur:0xabc:1',
    call_gas: '150000',
    payer: '0x2222222222222222222222222222222222222222',
    client: 'client-a',
    fault: 'revert',
    tx: JSON.stringify(transaction),
    block_number: '123',
    gas_used: '99000',
    fee: '198000000000000',
    reason: 'held: the call reverts',
    outcome: JSON.stringify(outcome),
  }
  t.strictSame(fromRow(full), {
    id: 'sub_1',
    chain: 'local',
    stage: 'done',
    createdAt: 1_700_000_000_000,
    updatedAt: 1_700_000_000_001,
    deadline: 1_700_000_600,
    request,
    identity: 'calibur:0xabc:1',
    callGas: '150000',
    payer: '0x2222222222222222222222222222222222222222',
    client: 'client-a',
    fault: 'revert',
    transaction,
    blockNumber: '123',
    gasUsed: '99000',
    fee: '198000000000000',
    reason: 'held: the call reverts',
    outcome,
  })
  t.equal(fromRow({ ...bare, fault: 'payer' }).fault, 'payer')
  // a fault the store does not know is dropped, not passed on
  t.notOk('fault' in fromRow({ ...bare, fault: 'other' }))
  t.notOk('fault' in fromRow({ ...bare, fault: '' }))
})

t.test('patchColumns: updated_at always, each patched field to its column', async (t) => {
  t.strictSame(patchColumns({}, 42), { updated_at: 42 })
  t.strictSame(
    patchColumns({ stage: 'done', transaction, blockNumber: '123', gasUsed: '99000', fee: '5', reason: 'why', outcome: outcome as never, fault: 'payer' }, 43),
    {
      updated_at: 43,
      stage: 'done',
      tx: JSON.stringify(transaction),
      tx_nonce: 7,
      lane: null,
      block_number: '123',
      gas_used: '99000',
      fee: '5',
      reason: 'why',
      outcome: JSON.stringify(outcome),
      fault: 'payer',
    },
  )
  // null clears: the transaction (and its nonce) and the reason
  t.strictSame(patchColumns({ transaction: null, reason: null }, 44), { updated_at: 44, tx: null, tx_nonce: null, lane: null, reason: null })
  // a transaction names its lane, lowercased for the store's index
  t.equal(patchColumns({ transaction: { ...transaction, from: '0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65' } }, 46).lane, '0x15d34aaf54267db7d7c367839aaf71a00a2c6a65')
  // what a row stores, fromRow reads back
  const columns = patchColumns({ transaction, outcome: outcome as never }, 45)
  const back = fromRow({ ...bare, tx: columns.tx as string, outcome: columns.outcome as string })
  t.strictSame(back.transaction, transaction)
  t.strictSame(back.outcome, outcome)
})

t.test('a row stored before base-unit fields were named for their unit reads with the new names', async (t) => {
  const legacy = fromRow({
    ...bare,
    request: JSON.stringify({ ...request, payment: { token: '0x2222222222222222222222222222222222222222', amount: '1250000' } }),
    outcome: JSON.stringify({ paid: '1250000', callSucceeded: true }),
  })
  t.same(legacy.request.payment, { token: '0x2222222222222222222222222222222222222222', amountBaseUnits: '1250000' })
  t.same(legacy.outcome, { paidBaseUnits: '1250000', callSucceeded: true })
  const current = fromRow({
    ...bare,
    request: JSON.stringify({ ...request, payment: { token: '0x2222222222222222222222222222222222222222', amountBaseUnits: '7' } }),
    outcome: JSON.stringify({ paidBaseUnits: '7', callSucceeded: false }),
  })
  t.same(current.request.payment, { token: '0x2222222222222222222222222222222222222222', amountBaseUnits: '7' })
  t.same(current.outcome, { paidBaseUnits: '7', callSucceeded: false })
})
