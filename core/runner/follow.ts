/**
 * Following what is in flight, once per block: a transaction's receipt and confirmations, and what
 * becomes of one not included — sent again as stored after a restart, replaced at raised fees within
 * what its payment covers (`replace`), or given way to a self-transfer at its nonce (`cancel`: past
 * `runner.maxSendingMs`, near its payment's expiry, or an L1 data fee risen past the payment); a
 * nonce the node lost filled (`fillGap`); and an included relay's outcome read from the Runner's
 * `Relayed` event (`outcomeOf`).
 */
import { getAddress, keccak256, parseTransaction, type Hex, type Log, type TransactionReceipt, TransactionReceiptNotFoundError } from 'viem'
import { readFees } from '../chain/fees.ts'
import { L1_FEE_HEADROOM_BPS, readL1DataFee, readL1DataFeeOfBytes } from '../chain/l1DataFee.ts'
import { readWeiPerBaseUnit } from '../chain/tokenPrice.ts'
import { ToolError } from '../tool/tool.ts'
import { describeCallFailure } from '../relay/callFailure.ts'
import type { RelayContext } from '../relay/context.ts'
import type { PaymentToken } from '../charge/gasPricer.ts'
import { paymentToken } from '../relay/paymentToken.ts'
import { relayOfRequest } from '../relay/relayOfRequest.ts'
import { describeRevertData } from '../relay/revertReason.ts'
import { relayedEvent, signedCharge } from '../relay/runnerCall.ts'
import { paymentCovers, tokenToWei, worstCaseWei } from '../charge/pricing.ts'
import type { Fees, PreparedRelay } from '../relay/runnerTransaction.ts'
import type { RelayOutcome, SubmitRequest } from '../relay/schemas.ts'
import { StaleEpochError, type SentTransaction, type Submission } from '../store/store.ts'
import { nearExpiry } from './holds.ts'
import type { Lane } from './lanes.ts'
import { broadcast, prepare, sign } from './send.ts'
import type { RunnerState } from './state.ts'

/**
 * Why a relay in flight gives way to a cancellation; `expiring` when for its payment's (or its signed
 * call's) expiry, which its payer chose; `instead` when the relay itself, included, would now cost the runner this much
 * (wei) beyond its payment's worth: a cancellation costing less is the smaller loss.
 */
interface Cancellation {
  readonly why: string
  readonly expiring?: true
  readonly instead?: bigint
}

/**
 * A nonce below the next one that the node has no transaction for (a transaction dropped from its
 * pool, one sent by hand) would hold every later one back: it is filled with the stored bytes of the
 * submission that holds it, or with a self-transfer — that submission's cancellation when its
 * payment is about to expire (its id is returned once sent), a bare one when no submission holds it.
 * A gap is never filled for more than it costs: the cancellation only while a later nonce waits
 * behind it (none waiting, nothing is held back: the relay is followed as any in flight), and at
 * no more than the relay's payment is worth (`cancel`'s cap: past it, the later nonces wait for
 * the fees to fall, as a stuck relay's cancellation does).
 */
export async function fillGap(state: RunnerState, lane: Lane, inFlight: readonly Submission[]): Promise<string | undefined> {
  const { network } = state.context
  const pending = await network.client.getTransactionCount({ address: lane.address, blockTag: 'pending' })
  if (pending >= lane.nextNonce!) return
  const held = inFlight.find((submission) => submission.transaction?.nonce === pending)
  const expiring = held && nearExpiry(state, held, Date.now())
  if (held && !expiring) {
    // Ours, but not in the node's pool: sent again as stored.
    await broadcast(state, held.transaction!.raw)
    return
  }
  if (held) {
    // Its payment (or its call's signed transfer) expires too soon to be taken: its bytes could only
    // revert (or pay for a call that fails), at the runner's cost or its payer's. With nothing after
    // it, it holds nothing back.
    if (lane.nextNonce! === pending + 1) return
    const sent = await cancel(state, lane, held, held.transaction!, { why: `lost by the node, and ${expiring!.what} came within ${network.config.relay.paymentMarginSec} s of expiring` })
    return sent ? held.id : undefined
  }
  const fees = await readFees(network.client)
  const raw = await lane.account.signTransaction({ chainId: network.config.chainId, to: lane.address, value: 0n, gas: 21_000n, nonce: pending, ...fees, type: 'eip1559' })
  // No submission's, so not stored: the fence is checked last, just before it goes.
  const current = await state.context.store.runnerEpoch(lane.fence!.key)
  if (current !== lane.fence!.epoch) throw new StaleEpochError(lane.fence!, current)
  const refusal = await broadcast(state, raw)
  state.log.warn({ operator: lane.address, nonce: pending, next: lane.nextNonce, refused: refusal }, 'filled a nonce gap with a self-transfer')
}

/** Follows a transaction in flight; answers whether it was found included. */
export async function follow(state: RunnerState, lane: Lane, submission: Submission, restarted: boolean, latest: bigint): Promise<boolean> {
  const { network, store } = state.context
  const transaction = submission.transaction!
  // Looked for at this block already, with the same hashes: no receipt can have come since, and a
  // confirming one gains no confirmation. Its receipts are read again at the next block.
  const looked = state.lookedAt.get(submission.id)
  const seen = !restarted && looked !== undefined && looked.block === latest && looked.hashes === transaction.hashes.length
  if (seen && submission.stage === 'confirming') return false
  const { receipt, answered } = seen ? { receipt: undefined, answered: false } : await receiptOf(state, transaction.hashes)
  if (answered) state.lookedAt.set(submission.id, { block: latest, hashes: transaction.hashes.length })
  if (receipt) {
    // OP-stack receipts carry the L1 data fee the runner also paid (viem passes the field through).
    const l1Fee = (receipt as { l1Fee?: bigint | string | null }).l1Fee
    const fee = (receipt.gasUsed * receipt.effectiveGasPrice + BigInt(l1Fee ?? 0)).toString()
    const included = { blockNumber: receipt.blockNumber.toString(), gasUsed: receipt.gasUsed.toString(), fee }
    const transactionOfReceipt = receipt.transactionHash === transaction.hash ? {} : { transaction: { ...transaction, hash: receipt.transactionHash } }
    if (receipt.to !== null && getAddress(receipt.to) === lane.address) {
      // A relay cancelled for its payment's expiry: the payer chose that expiry, and the runner paid the cancellation.
      const fault = transaction.expiring ? { fault: 'payer' as const } : {}
      await store.update(submission.id, { ...included, ...transactionOfReceipt, ...fault, stage: 'failed', reason: `cancelled: ${submission.reason ?? 'not included in time'}` }, lane.fence!)
      return true
    }
    if (receipt.status !== 'success') {
      // Only the payer's own doing can make a payment phase that simulated fail (DESIGN §3's one bounded loss).
      await store.update(submission.id, { ...included, ...transactionOfReceipt, stage: 'failed', fault: 'revert', reason: 'the transaction reverted in its payment phase: nothing was paid' }, lane.fence!)
      return true
    }
    // Its block is there, whatever the latest read before it said.
    const head = latest > receipt.blockNumber ? latest : receipt.blockNumber
    const confirmed = head - receipt.blockNumber + 1n >= BigInt(network.config.runner.confirmations)
    const outcome = submission.outcome ?? (await outcomeOf(state, submission, receipt))
    await store.update(submission.id, {
      ...included,
      ...transactionOfReceipt,
      outcome,
      ...(outcome.callSucceeded ? {} : { reason: `the call failed on chain (the payment was taken)${outcome.callReason ? `: ${outcome.callReason}` : ''}` }),
      stage: confirmed ? 'done' : 'confirming',
    }, lane.fence!)
    return submission.stage === 'sending'
  }
  const now = Date.now()
  // After a restart what was in flight goes again as stored, unless its payment is about to expire:
  // then it is cancelled below rather than sent to revert.
  if (restarted && !nearExpiry(state, submission, now)) {
    await broadcast(state, transaction.raw)
    return false
  }
  const stuck = now - transaction.sentAt > network.config.runner.stuckAfterMs
  if (transaction.cancel) {
    // A cancellation itself stuck: outbid again, within its cap.
    if (stuck) await cancel(state, lane, submission, transaction, { why: submission.reason ?? 'not included in time' })
    return false
  }
  const early = cancelReason(state, submission, transaction, now)
  const l1 = early ? undefined : await l1FeeNow(state, submission, transaction)
  const cancellation = early ?? l1?.cancellation
  if (cancellation) {
    await cancel(state, lane, submission, transaction, cancellation)
    return false
  }
  if (stuck || l1?.passedCharge) await replace(state, lane, submission, transaction)
  return false
}

/** Why a relay in flight must give way to a cancellation now, if it must. */
function cancelReason(state: RunnerState, submission: Submission, transaction: SentTransaction, now: number): Cancellation | undefined {
  const { config } = state.context.network
  if (now - transaction.firstSentAt > config.runner.maxSendingMs) return { why: `not included within ${config.runner.maxSendingMs / 1000} s` }
  const expiring = nearExpiry(state, submission, now)
  if (expiring) return { why: `not included before ${expiring.what} came within ${config.relay.paymentMarginSec} s of expiring`, expiring: true }
  return undefined
}

/**
 * On a chain with an L1 data fee, which the signed transaction cannot cap: the fee of the bytes in
 * flight now. Risen past what the payment covers beside its gas: a cancellation, rather than an
 * inclusion at a loss. Risen past the L1 fee its charge counts (a payee that refunds keeps only the
 * charge): `passedCharge`, and it is replaced, re-priced, before it is included at a loss.
 */
async function l1FeeNow(state: RunnerState, submission: Submission, transaction: SentTransaction): Promise<{ cancellation?: Cancellation; passedCharge: boolean } | undefined> {
  const { network } = state.context
  if (network.config.l1DataFee === undefined) return undefined
  const token = paymentToken(network, submission.request.payment.token)
  const { amount } = relayOfRequest(state.context, submission.request.call, submission.request.payment, token)
  const [l1FeeWei, weiPerBaseUnit] = await Promise.all([readL1DataFeeOfBytes(network, transaction.raw), readWeiPerBaseUnit(network, token.address)])
  const coverage = paymentCovers(amount, { gasLimit: BigInt(transaction.gas), maxFeePerGas: BigInt(transaction.maxFeePerGas), l1FeeWei }, weiPerBaseUnit)
  if (!coverage.covered) {
    const cancellation = { why: `its L1 data fee rose to ${l1FeeWei} wei while it waited, past what the payment covers`, instead: coverage.worstCaseWei - tokenToWei(amount, weiPerBaseUnit) }
    return { cancellation, passedCharge: false }
  }
  // The charge counts the fee as priced at signing, headroom included; what the chain will take is the fee now, without it.
  const charge = signedCharge(parseTransaction(transaction.raw).data ?? '0x')
  const feeNow = (l1FeeWei * 10_000n) / (10_000n + L1_FEE_HEADROOM_BPS)
  return { passedCharge: charge !== undefined && charge.refundGas !== 0n && feeNow > charge.l1FeeWei }
}

/**
 * Takes a relay's nonce back with a 0-value self-transfer that outbids it (what nodes require of a
 * replacement), so the nonces after it can move. Its cost (21,000 gas at its max fee) is capped at
 * what the relay's payment is worth: past that it waits at its fee. Answers whether it was sent.
 */
async function cancel(state: RunnerState, lane: Lane, submission: Submission, stuck: SentTransaction, { why, expiring, instead }: Cancellation): Promise<boolean> {
  const { network, store } = state.context
  const token = paymentToken(network, submission.request.payment.token)
  const { amount } = relayOfRequest(state.context, submission.request.call, submission.request.payment, token)
  const [current, weiPerBaseUnit] = await Promise.all([readFees(network.client), readWeiPerBaseUnit(network, token.address)])
  const bump = (value: string) => (BigInt(value) * BigInt(10_000 + network.config.runner.feeBumpBps)) / 10_000n
  const maxPriorityFeePerGas = max(bump(stuck.maxPriorityFeePerGas), current.maxPriorityFeePerGas)
  const maxFeePerGas = max(bump(stuck.maxFeePerGas), current.maxFeePerGas, maxPriorityFeePerGas)
  // On an OP-stack chain the self-transfer pays an L1 data fee too, which no signed field caps.
  const l1FeeWei = await readL1DataFee(network, { to: lane.address, data: '0x', gas: 21_000n, nonce: stuck.nonce, maxFeePerGas, maxPriorityFeePerGas })
  const cost = { gasLimit: 21_000n, maxFeePerGas, l1FeeWei }
  if (!paymentCovers(amount, cost, weiPerBaseUnit).covered && !(instead !== undefined && worstCaseWei(cost) < instead)) {
    state.log.warn({ submission: submission.id, nonce: stuck.nonce, why }, 'not cancelled: the cancellation would cost more than the payment is worth')
    return false
  }
  const raw = await lane.account.signTransaction({
    chainId: network.config.chainId,
    to: lane.address,
    value: 0n,
    gas: 21_000n,
    nonce: stuck.nonce,
    maxFeePerGas,
    maxPriorityFeePerGas,
    type: 'eip1559',
  })
  const hash = keccak256(raw)
  const cancel: SentTransaction = {
    ...stuck,
    hash,
    raw,
    gas: '21000',
    maxFeePerGas: maxFeePerGas.toString(),
    maxPriorityFeePerGas: maxPriorityFeePerGas.toString(),
    sentAt: Date.now(),
    hashes: [...stuck.hashes, hash],
    cancel: true,
    ...(expiring ? { expiring: true as const } : {}),
  }
  await store.update(submission.id, { transaction: cancel, reason: why }, lane.fence!)
  const refusal = await broadcast(state, raw)
  state.log.warn({ submission: submission.id, nonce: stuck.nonce, hash, refused: refusal, why }, 'cancelling a transaction')
  return true
}

/** What an included transaction did, from the Runner's `Relayed` event; a failed batch's reason is replayed. */
async function outcomeOf(state: RunnerState, submission: Submission, receipt: TransactionReceipt): Promise<RelayOutcome> {
  const { network } = state.context
  const { request } = submission
  const token = paymentToken(network, request.payment.token)
  const relayed = relayedEvent(receipt.logs, getAddress(network.config.runner.contract))
  if (!relayed) return { paidBaseUnits: '0', callSucceeded: false, callReason: 'the Runner logged no relay' }
  const paid = { paidBaseUnits: relayed.received.toString(), chargedBaseUnits: relayed.charged.toString(), refundedBaseUnits: relayed.refunded.toString() }
  if (relayed.callSucceeded) {
    const swallowed = swallowedFailure(state.context, request, token, receipt.logs)
    return swallowed === undefined ? { ...paid, callSucceeded: true } : { ...paid, callSucceeded: false, callReason: swallowed }
  }
  const requested = relayOfRequest(state.context, request.call, request.payment, token)
  const callReason =
    relayed.reason !== '0x'
      ? describeRevertData(relayed.reason, token.decimals, token.symbol, state.context.delegates)
      : await describeCallFailure(state.context, requested, token, receipt.blockNumber - 1n).catch(() => undefined)
  return { ...paid, callSucceeded: false, ...(callReason ? { callReason } : {}) }
}

/**
 * Same nonce, same transaction, fees raised by the configured bump (at least the network's current
 * ones) but never past what the payment covers: re-simulated at the new fees first. Where the bump
 * the node requires would pass the payment's cover, it is not replaced: it waits at its fee.
 */
async function replace(state: RunnerState, lane: Lane, submission: Submission, stuck: SentTransaction): Promise<void> {
  const { network, store } = state.context
  const { config, client } = network
  const { id } = submission
  const bump = (value: string) => (BigInt(value) * BigInt(10_000 + config.runner.feeBumpBps)) / 10_000n
  let prepared: PreparedRelay
  let current: Fees
  try {
    current = await readFees(client)
    const maxPriorityFeePerGas = max(bump(stuck.maxPriorityFeePerGas), current.maxPriorityFeePerGas)
    const maxFeePerGas = max(bump(stuck.maxFeePerGas), current.maxFeePerGas, maxPriorityFeePerGas)
    // The stipend the stuck one carries, so that only the fees change; against the latest block,
    // since the pending state holds the stuck transaction itself.
    const measured = { callGas: BigInt(stuck.callGas), refundGas: BigInt(stuck.refundGas ?? 0) }
    prepared = await prepare(state, lane, submission, stuck.nonce, { maxFeePerGas, maxPriorityFeePerGas }, measured, false)
  } catch (error) {
    if (!(error instanceof ToolError)) throw error
    state.log.warn({ submission: id, reason: error.message }, 'stuck transaction not replaced: it would no longer succeed')
    return
  }
  if (!prepared.coverage.covered) {
    state.log.warn({ submission: id, worstCaseWei: prepared.coverage.worstCaseWei.toString() }, 'stuck transaction not replaced: the payment does not cover the raised fees')
    if (!submission.reason?.startsWith('replacement')) await store.update(id, { reason: 'replacement held: the payment does not cover the fee the node requires to replace it' }, lane.fence!)
    return
  }
  const replacement = await sign(state, lane, prepared, stuck.nonce, stuck.hashes, stuck.firstSentAt)
  await store.update(id, { transaction: replacement }, lane.fence!)
  await broadcast(state, replacement.raw)
  state.log.info({ submission: id, hash: replacement.hash, replaces: stuck.hash, nonce: stuck.nonce }, 'replaced a stuck transaction')
}

/**
 * The receipt of whichever of `hashes` was included, if any; `answered` when the node answered for
 * every hash (its receipt, or that it has none), not when a read failed.
 */
async function receiptOf(state: RunnerState, hashes: readonly Hex[]): Promise<{ receipt: TransactionReceipt | undefined; answered: boolean }> {
  let answered = true
  const receipts = await Promise.all(
    hashes.map((hash) =>
      state.context.network.client.getTransactionReceipt({ hash }).catch((error: unknown) => {
        if (!(error instanceof TransactionReceiptNotFoundError)) answered = false
        return undefined
      }),
    ),
  )
  return { receipt: receipts.find((receipt) => receipt !== undefined), answered }
}

function max(...values: bigint[]): bigint {
  return values.reduce((a, b) => (a > b ? a : b))
}

/**
 * Why a delegate batch's call phase failed though the Runner saw it return: a target that catches
 * the account's failure (an EntryPoint) says so in its logs (`BatchTerms.swallowedFailure`).
 * `undefined` for a signed-transfer payment, a delegate whose target does not catch, or a request
 * that no longer reads (its delegate no longer served): the Runner's word stands.
 */
function swallowedFailure(context: RelayContext, request: SubmitRequest, token: PaymentToken, logs: readonly Log[]): string | undefined {
  if (!('batch' in request.payment)) return undefined
  try {
    return relayOfRequest(context, request.call, request.payment, token).batch?.swallowedFailure?.(logs)
  } catch {
    return undefined
  }
}
