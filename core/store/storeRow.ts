import type { RelayOutcome, Stage, SubmitRequest } from '../relay/schemas.ts'
import type { SentTransaction, Submission, SubmissionPatch } from './store.ts'

/**
 * A submission as both stores keep it: one row, the request and the transaction as JSON text.
 * PostgreSQL returns BIGINT columns as strings (they may exceed 2⁵³), so the numbers are read
 * with `Number`: unix milliseconds and seconds are far below that.
 */
export interface SubmissionRow {
  id: string
  chain: string
  stage: Stage
  created_at: number | string
  updated_at: number | string
  deadline: number | string
  request: string
  identity: string | null
  call_gas: string | null
  refund_gas: string | null
  payer: string | null
  client: string | null
  payment_id: string | null
  call_spends: string | null
  fault: string | null
  tx: string | null
  block_number: string | null
  gas_used: string | null
  fee: string | null
  reason: string | null
  outcome: string | null
}

/** The columns a patch sets, by name; `updated_at` is always one of them. */
export function patchColumns(patch: SubmissionPatch, now: number): Record<string, string | number | null> {
  const columns: Record<string, string | number | null> = { updated_at: now }
  if (patch.stage !== undefined) columns.stage = patch.stage
  if (patch.transaction === null) {
    columns.tx = null
    columns.tx_nonce = null
    columns.lane = null
  } else if (patch.transaction !== undefined) {
    columns.tx = JSON.stringify(patch.transaction)
    columns.tx_nonce = patch.transaction.nonce
    columns.lane = patch.transaction.from?.toLowerCase() ?? null
  }
  if (patch.blockNumber !== undefined) columns.block_number = patch.blockNumber
  if (patch.gasUsed !== undefined) columns.gas_used = patch.gasUsed
  if (patch.fee !== undefined) columns.fee = patch.fee
  if (patch.reason !== undefined) columns.reason = patch.reason
  if (patch.outcome !== undefined) columns.outcome = JSON.stringify(patch.outcome)
  if (patch.fault !== undefined) columns.fault = patch.fault
  return columns
}

export function fromRow(row: SubmissionRow): Submission {
  return {
    id: row.id,
    chain: row.chain,
    stage: row.stage,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
    deadline: Number(row.deadline),
    request: requestOf(row.request),
    ...(row.identity ? { identity: row.identity } : {}),
    ...(row.call_gas ? { callGas: row.call_gas } : {}),
    ...(row.refund_gas ? { refundGas: row.refund_gas } : {}),
    ...(row.payment_id ? { paymentId: row.payment_id } : {}),
    ...(row.call_spends ? { callSpends: row.call_spends } : {}),
    ...(row.payer ? { payer: row.payer } : {}),
    ...(row.client ? { client: row.client } : {}),
    ...(row.fault === 'payer' || row.fault === 'revert' ? { fault: row.fault } : {}),
    ...(row.tx ? { transaction: JSON.parse(row.tx) as SentTransaction } : {}),
    ...(row.block_number ? { blockNumber: row.block_number } : {}),
    ...(row.gas_used ? { gasUsed: row.gas_used } : {}),
    ...(row.fee ? { fee: row.fee } : {}),
    ...(row.reason ? { reason: row.reason } : {}),
    ...(row.outcome ? { outcome: outcomeOf(row.outcome) } : {}),
  }
}

// Rows stored before base-unit fields were named for their unit (`payment.amount`, `outcome.paid`)
// stay readable: they live on for `relay.retentionSec` after an upgrade.
function requestOf(json: string): SubmitRequest {
  const request = JSON.parse(json) as SubmitRequest & { payment: { amount?: string } }
  if (typeof request.payment === 'object' && 'amount' in request.payment && !('amountBaseUnits' in request.payment)) {
    const { amount, ...payment } = request.payment
    return { ...request, payment: { ...payment, amountBaseUnits: amount } as SubmitRequest['payment'] }
  }
  return request
}

function outcomeOf(json: string): RelayOutcome {
  const outcome = JSON.parse(json) as RelayOutcome & { paid?: string }
  if (outcome.paid === undefined || outcome.paidBaseUnits !== undefined) return outcome
  const { paid, ...rest } = outcome
  return { ...rest, paidBaseUnits: paid }
}
