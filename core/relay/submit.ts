import { randomUUID } from 'node:crypto'
import { formatUnits, type Hex } from 'viem'
import { serializeAsSigned } from '../chain/l1DataFee.ts'
import { ToolError } from '../tool/tool.ts'
import { requirePinnedPayment } from './paymentPin.ts'
import type { RelayContext } from './context.ts'
import { PaymentRefusal } from './paymentRefusal.ts'
import { paymentToken, requireSignedTransferPayer } from './paymentToken.ts'
import { relayOfRequest, type RequestedRelay } from './relayOfRequest.ts'
import type { PaymentToken } from '../charge/gasPricer.ts'
import { admit } from './admission.ts'
import { leastPaymentValiditySec } from './paymentValidity.ts'
import { simulateAs } from './simulationGate.ts'
import { ActiveCapReached, AlreadySpent, type Submission } from '../store/store.ts'
import { requireRevertCostWithin } from './revertCost.ts'
import { describeCallFailure } from './callFailure.ts'
import { prepareRunnerTransaction, type PreparedRelay } from './runnerTransaction.ts'
import type { SubmissionView, SubmitRequest } from './schemas.ts'
import { submissionView } from './status.ts'

/**
 * Accepts a call and its payment for the runner, then stores it and answers at once with its id.
 * Nothing is sent here. Its checks, in order:
 * 1. the payment is in an accepted token, and is one of the two payment-first forms: a signed
 *    EIP-3009 transfer to the payee, or a delegate's signed payment-only batch paying the payee,
 *    run by the Runner in a call of its own before the account's batch of calls (both read by the
 *    delegate's group; a payment hidden anywhere else is refused);
 * 2. the same payment (its identity: token, payer and nonce) is not already active, nor done (its
 *    payment spent): if it is, with the same call and payment, that submission answers, and nothing
 *    new is stored (so a client's retry is free, before and after; one its client submits again
 *    while the first is checked waits for the first's answer, simulating nothing); with another
 *    call (or another payment on the same nonce) it is refused, naming that submission — its
 *    `done` would tell of calls that never ran; a call that is a delegate's signed batch
 *    (`Delegate.callSpends`) already spent by another active submission, however paid, is refused
 *    as it is stored (one signed batch is paid for once); then the payer's
 *    and the client's standing (`admit`: caps on active submissions, throttling and bans for
 *    submissions that failed by their doing), the caps counted again in the transaction that
 *    stores it (so concurrent submits cannot all pass one count);
 * 3. the deadline (default now + `relay.submissionTtlSec`) is ahead and no later than that; the
 *    payment's own (`validBefore`, the batch's deadline) is at least `relay.paymentMarginSec` plus
 *    `relay.inclusionSec` ahead, by the clock: a transaction sent with less would be cancelled at
 *    the margin before its time to be included, and the runner would pay the cancellation; and so
 *    is the call's own `validBefore` when it is a signed EIP-3009 transfer on a configured token
 *    (expired before inclusion, it would fail and its payment still be taken);
 * 4. a signed transfer's payer is one the Runner takes (`requireSignedTransferPayer`): no code and a
 *    65-byte signature, code on the Runner's list of wallets, or no code yet and an ERC-6492 signature
 *    whose factory is on its list (the Runner deploys the wallet, then the token checks its signature);
 *    the exact runner transaction — from, to, data with the call's stipend, gas limit, fee fields,
 *    authorization list — simulated at the latest block, as one of the client's simulations
 *    (`simulateAs`: a few at once, and a budget of gas for the refused ones): the payment phase pays and the call
 *    succeeds with its stipend (a call that fails in simulation is refused: on chain it would
 *    still pay; where the batch's target catches the account's failures, the account's calls are
 *    replayed as it would run them, after its payment, and must succeed too); a delegate's payment batch
 *    must revert when a stranger sends it (`requirePinnedPayment`: one anyone could run, someone
 *    else could run first); its gas limit within what one transaction may carry; its signed bytes within
 *    `relay.maxTransactionBytes`; what it would cost if its payer voided the payment and it
 *    reverted in its payment phase (`revertCostGas`: calldata at the EIP-7623 floor included)
 *    within `relay.maxRevertGas`, unless the runner sends through a revert-protected endpoint;
 * 5. the payment covers the worst case the runner would sign now: gas limit × max fee per gas,
 *    plus the L1 data fee where the chain charges one, at the pool's price.
 *
 * A `paymentId` (x402's payment-identifier) is stored with it: one another submission of the chain
 * holds already is refused (`PaymentIdTaken`).
 *
 * @example
 * const { id } = await submitCall(context, { call, payment: { token: usdc, authorization, signature } })
 */
export async function submitCall(context: RelayContext, submitted: SubmitRequest, client?: string, paymentId?: string): Promise<SubmissionView> {
  const token = paymentToken(context.network, submitted.payment.token)
  // A token named by its symbol is kept by its address: the Runner, the store and the runner loop read that.
  const request: SubmitRequest = { ...submitted, payment: { ...submitted.payment, token: token.address } }
  const requested = relayOfRequest(context, request.call, request.payment, token)
  const repeated = (await context.store.activeByIdentity(requested.identity)) ?? (await context.store.doneByIdentity(requested.identity))
  if (repeated) return repeatedAnswer(request, requested, repeated)
  // The same call and payment submitted again by the same client while it is checked is answered
  // with the first's answer: one simulation. (Another client's answer may name that client: it is
  // not shared; another call on the same payment is checked apart, and refused as it is stored.)
  const key = `${client ?? ''} ${relayKey(request)}`
  const checking = context.checking?.get(key)
  if (checking) return checking
  const answer = acceptCall(context, request, requested, token, client, paymentId)
  context.checking?.set(key, answer)
  return answer.finally(() => context.checking?.delete(key))
}

/** submitCall's checks from 2 on (its payment read), and the store. */
async function acceptCall(context: RelayContext, request: SubmitRequest, requested: RequestedRelay, token: PaymentToken, client: string | undefined, paymentId: string | undefined): Promise<SubmissionView> {
  const { network, store } = context
  const { config } = network
  const admitted = await admit(context, requested.payer, client)
  const clock = context.now ?? Date.now
  const now = Math.floor(clock() / 1000)
  const { submissionTtlSec } = config.relay
  const deadline = request.deadline ?? now + submissionTtlSec
  if (deadline <= now) throw new ToolError(`the deadline ${deadline} has passed (now ${now})`)
  if (deadline > now + submissionTtlSec) {
    throw new ToolError(`the deadline ${deadline} is more than ${submissionTtlSec} s away (now ${now}), longer than this relay holds a submission: give one within ${submissionTtlSec} s, or none`)
  }
  const leastValidSec = leastPaymentValiditySec(config.relay)
  if (requested.paymentDeadline !== 0n && requested.paymentDeadline < BigInt(now + leastValidSec)) {
    throw new PaymentRefusal(`the payment expires at ${requested.paymentDeadline} (now ${now}), too soon to send it safely: it must be valid at least ${leastValidSec} s more; sign a new one`, 'valid_before')
  }
  // Expired before inclusion, the call's own signed transfer would fail and its payment still be taken.
  if (requested.callDeadline !== 0n && requested.callDeadline < BigInt(now + leastValidSec)) {
    throw new ToolError(
      `the call's signed transfer expires at ${requested.callDeadline} (its validBefore; now ${now}), too soon to send it safely: ` +
        `it must be valid at least ${leastValidSec} s more; sign a new one (transfer_authorization)`,
    )
  }
  // The simulations are the caller's: bounded per client, a refused one counted at its gas.
  const prepared = await simulateAs(context.simulations, client, BigInt(config.relay.maxCallGas), (measured) => checkedTransaction(context, request, requested, token, measured))
  const createdAt = clock()
  const submission = {
    id: randomUUID(),
    chain: network.name,
    stage: 'waiting' as const,
    createdAt,
    updatedAt: createdAt,
    deadline,
    request,
    identity: requested.identity,
    callGas: prepared.callGas.toString(),
    ...(prepared.charge.refundGas === 0n ? {} : { refundGas: prepared.charge.refundGas.toString() }),
    payer: requested.payer,
    ...(client === undefined ? {} : { client }),
    ...(paymentId === undefined ? {} : { paymentId }),
    ...(requested.callSpends === undefined ? {} : { callSpends: requested.callSpends }),
  }
  // A concurrent submit of the same payment may have stored it first: then that one answers. The
  // caps are counted again as it is stored: concurrent submits all passed `admit` before any was.
  const stored = await store.insert(submission, admitted.caps).catch((error: unknown) => {
    if (error instanceof ActiveCapReached) throw admitted.busy(error)
    if (error instanceof AlreadySpent) {
      throw new ToolError(
        `refused: the signed batch this submission spends (${error.spent}) is already being relayed by the submission ${error.holder}: ` +
          'a signed batch is relayed, and paid for, once. Ask status with that id; nothing was taken',
      )
    }
    throw error
  })
  if (stored.id !== submission.id) return repeatedAnswer(request, requested, stored)
  context.wake()
  return submissionView(stored)
}

/**
 * The runner transaction for a submission, simulated exactly, within what a node takes and what the
 * relay risks, and covered by its payment (submitCall's checks 4 and 5); `measured` is told its gas
 * as soon as it is known.
 */
async function checkedTransaction(context: RelayContext, request: SubmitRequest, requested: RequestedRelay, token: PaymentToken, measured: (gas: bigint) => void): Promise<PreparedRelay> {
  const { config } = context.network
  const { maxTransactionBytes } = config.relay
  const { relay } = requested
  // The payer is read in the same JSON-RPC batch as the simulation's first reads; its refusal is said first.
  const payerRefusal = relay.form === 'authorization' ? requireSignedTransferPayer(context.network, requested.payer, relay.payment.signature as Hex, context.delegates) : undefined
  const preparing = prepareRunnerTransaction(context, requested.relay, request.authorizationList, {
    token,
    amount: requested.amount,
    nonce: 0,
    explainCallFailure: () => describeCallFailure(context, requested, token),
  })
  preparing.catch(() => undefined)
  await payerRefusal
  const prepared = await preparing
  measured(prepared.gas)
  if (requested.batch && requested.batchDelegate) await requirePinnedPayment(context.network, requested.batch, requested.batchDelegate)
  // The Runner cannot see a failure its target catches: the account's calls are replayed as it would run them.
  if (requested.batch?.swallowedFailure) {
    const hidden = await describeCallFailure(context, requested, token)
    if (hidden !== undefined) {
      throw new ToolError(`refused: the call fails in simulation: ${hidden}. Nothing was sent. A call that fails on chain still pays, so Bruno only sends calls that succeed in simulation`)
    }
  }
  const bytes = signedTransactionBytes(prepared, config.chainId)
  if (bytes > maxTransactionBytes) {
    throw new ToolError(`refused: the runner's transaction would be ${bytes} bytes, over the ${maxTransactionBytes} a node accepts: make the call's data smaller`)
  }
  requireRevertCostWithin(config, requested.relay, prepared.data, prepared.authorizationList?.length ?? 0)
  if (!prepared.coverage.covered) {
    throw new PaymentRefusal(
      `refused: the payment of ${formatUnits(requested.amount, token.decimals)} ${token.symbol} is below the most the runner could pay for it now, ` +
        `${formatUnits(prepared.coverage.requiredAmount, token.decimals)} ${token.symbol} (${prepared.gas} gas at up to ${prepared.fees.maxFeePerGas} wei${prepared.l1FeeWei > 0n ? ` plus an L1 data fee of ${prepared.l1FeeWei} wei` : ''}): quote again and pay the quoted amount`,
      'value',
    )
  }
  return prepared
}

/** The size of the runner's signed transaction, priced as `readL1DataFee` prices it (`serializeAsSigned`). */
function signedTransactionBytes(prepared: PreparedRelay, chainId: number): number {
  const { to, data, gas, fees, authorizationList } = prepared
  return (serializeAsSigned(chainId, { to, data, gas, nonce: 0, ...fees, ...(authorizationList ? { authorizationList } : {}) }).length - 2) / 2
}

/**
 * What answers a submission whose payment `repeated` already spends (or is spending): `repeated`
 * itself when it is the same call and payment (a retry is free), else a refusal naming it — its
 * `done` would tell of calls that never ran.
 */
function repeatedAnswer(request: SubmitRequest, requested: RequestedRelay, repeated: Submission): SubmissionView {
  if (relayKey(repeated.request) === relayKey(request)) return submissionView(repeated)
  const spent = repeated.stage === 'done' ? 'was already spent' : `is already being spent (${repeated.stage})`
  const batch = requested.batchDelegate
  const other = callKey(repeated.request) !== callKey(request) ? (batch ? 'other calls' : 'another call') : 'another payment'
  const remedy = batch
    ? `a signed batch's nonce pays once, for the calls signed with it. Nothing was taken; sign a new batch (${batch.tools.batch}) for these calls`
    : 'a signed transfer pays once, for the call first submitted with it. Nothing was taken; sign a new payment (payment_authorization) for this call'
  throw new ToolError(`refused: the payment's nonce (${requested.identity}) ${spent} by the submission ${repeated.id} with ${other}: ${remedy}, or ask status with that id`)
}

/**
 * A request's call and payment as one string: two requests with the same are one relay (the same
 * calldata to the same address, the same signed payment, whatever its signature's encoding).
 */
function relayKey(request: SubmitRequest): string {
  const { payment } = request
  const paid =
    'authorization' in payment
      ? (['from', 'to', 'value', 'validAfter', 'validBefore', 'nonce'] as const).map((field) => payment.authorization[field])
      : [payment.batch]
  return [callKey(request), payment.token, ...paid].join(' ').toLowerCase()
}

function callKey({ call }: SubmitRequest): string {
  return [call.to, call.data, call.value ?? '0'].join(' ').toLowerCase()
}
