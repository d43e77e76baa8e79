import { randomUUID } from 'node:crypto'
import { formatUnits } from 'viem'
import { ToolError } from '../tool.ts'
import type { RelayContext } from './context.ts'
import { paymentToken } from './paymentToken.ts'
import { relayOfRequest } from './relayOfRequest.ts'
import { describeCallFailure } from './callFailure.ts'
import { prepareRunnerTransaction } from './runnerTransaction.ts'
import type { SubmissionView, SubmitRequest } from './schemas.ts'
import { submissionView } from './status.ts'

/**
 * Accepts a call and its payment for the runner, then stores it and answers at once with its id.
 * Nothing is sent here. Its checks, in order:
 * 1. the payment is in an accepted token, and is one of the two payment-first forms: a signed
 *    EIP-3009 transfer to the payee, or a delegate's signed batch whose first call pays the payee
 *    (read by the delegate's group; a payment hidden anywhere else is refused);
 * 2. the deadline (and the payment's own: `validBefore`, the batch's deadline) is ahead;
 * 3. the exact runner transaction — from, to, data with the call's stipend, gas limit, fee fields,
 *    authorization list — simulated at the latest block: the payment phase pays and the call
 *    succeeds with its stipend (a call that fails in simulation is refused: on chain it would
 *    still pay);
 * 4. the payment covers the worst case the runner would sign now: gas limit × max fee per gas,
 *    plus the L1 data fee where the chain charges one, at the pool's price.
 *
 * @example
 * const { id } = await submitCall(context, { call, payment: { token: usdc, authorization, signature } })
 */
export async function submitCall(context: RelayContext, request: SubmitRequest): Promise<SubmissionView> {
  const { network, store } = context
  const { config } = network
  const token = paymentToken(network, request.payment.token)
  const requested = relayOfRequest(context, request.call, request.payment, token)
  const now = Math.floor(Date.now() / 1000)
  const deadline = request.deadline ?? now + config.relay.submissionTtlSec
  if (deadline <= now) throw new ToolError(`the deadline ${deadline} has passed (now ${now})`)
  if (requested.paymentDeadline !== 0n && requested.paymentDeadline <= BigInt(now)) {
    throw new ToolError(`the payment expired at ${requested.paymentDeadline} (now ${now}): sign a new one`)
  }
  const prepared = await prepareRunnerTransaction(context, requested.relay, request.authorizationList, {
    token,
    amount: requested.amount,
    nonce: 0,
    explainCallFailure: () => describeCallFailure(context, requested, token),
  })
  if (!prepared.coverage.covered) {
    throw new ToolError(
      `refused: the payment of ${formatUnits(requested.amount, token.decimals)} ${token.symbol} is below the most the runner could pay for it now, ` +
        `${formatUnits(prepared.coverage.requiredAmount, token.decimals)} ${token.symbol} (${prepared.gas} gas at up to ${prepared.fees.maxFeePerGas} wei${prepared.l1FeeWei > 0n ? ` plus an L1 data fee of ${prepared.l1FeeWei} wei` : ''}): quote again and pay the quoted amount`,
    )
  }
  const createdAt = Date.now()
  const submission = { id: randomUUID(), chain: network.name, stage: 'waiting' as const, createdAt, updatedAt: createdAt, deadline, request, callGas: prepared.callGas.toString() }
  await store.insert(submission)
  context.wake()
  return submissionView(submission)
}
