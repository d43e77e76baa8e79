import { randomUUID } from 'node:crypto'
import { formatUnits, getAddress, isAddressEqual } from 'viem'
import { ToolError } from '../tool.ts'
import type { RelayContext } from './context.ts'
import { measureRunnerCost, paymentToken, weiToToken } from './quote.ts'
import { paymentAmount } from './runnerCall.ts'
import type { SubmissionView, SubmitRequest } from './schemas.ts'
import { submissionView } from './status.ts'

/**
 * Accepts a call and its payment for the runner: checks what can be checked now — the payment is
 * to the payee in an accepted token, the whole runner transaction succeeds against the latest
 * state (so the call works and the payee gains at least the amount), and the amount covers the
 * gas at current fees — then stores it and answers at once with its id. Nothing is sent here.
 *
 * @example
 * const { id } = await submitCall(context, { call, payment: { token: usdc, amount: quote.amount } })
 */
export async function submitCall(context: RelayContext, request: SubmitRequest): Promise<SubmissionView> {
  const { network, store } = context
  const { config } = network
  const token = paymentToken(context, request.payment.token)
  const payee = getAddress(config.payee)
  if ('authorization' in request.payment && !isAddressEqual(getAddress(request.payment.authorization.to), payee)) {
    throw new ToolError(`the signed transfer pays ${request.payment.authorization.to}, not the payee ${payee}: sign a transfer to the payee (payment_authorization prepares it)`)
  }
  const now = Math.floor(Date.now() / 1000)
  const deadline = request.deadline ?? now + config.relay.submissionTtlSec
  if (deadline <= now) throw new ToolError(`the deadline ${deadline} has passed (now ${now})`)

  const amount = paymentAmount(request.payment)
  // One simulation of the exact transaction: it checks the call succeeds and the payee gains at
  // least the amount, and its gas (the signed transfer's included) prices the check below.
  const measured = await measureRunnerCost(context, request.call, request.authorizationList, token, request.payment, 'refused')
  const required = weiToToken(measured.gas * measured.feePerGas, measured.price)
  if (amount < required) {
    throw new ToolError(
      `refused: the payment of ${formatUnits(amount, token.decimals)} ${token.symbol} is below the gas cost now, ` +
        `${formatUnits(required, token.decimals)} ${token.symbol}: quote again and pay the quoted amount`,
    )
  }
  const createdAt = Date.now()
  const submission = { id: randomUUID(), chain: network.name, stage: 'waiting' as const, createdAt, updatedAt: createdAt, deadline, request }
  await store.insert(submission)
  context.wake()
  return submissionView(submission)
}
