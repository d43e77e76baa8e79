import { getAddress, isAddressEqual, maxUint256, size, type Address, type Hex } from 'viem'
import { ToolError } from '../tool/tool.ts'
import { PaymentRefusal } from './paymentRefusal.ts'
import type { BatchTerms, Delegate } from './delegate.ts'
import type { RelayContext } from './context.ts'
import type { PaymentToken } from '../charge/gasPricer.ts'
import type { RunnerRelay } from './runnerCall.ts'
import { readSignature } from './signature.ts'
import type { Payment, RelayCall } from './schemas.ts'
import { signedTransferOfCall } from './signedTransferCall.ts'

/** A request as the Runner will run it, with what it pays and what identifies its payment. */
export interface RequestedRelay {
  readonly relay: RunnerRelay
  /** What the payment pays the payee, in the token's base units. */
  readonly amount: bigint
  /** Unix seconds after which the payment itself is refused on chain (3009 `validBefore`, a batch's deadline); 0 for none. */
  readonly paymentDeadline: bigint
  /** Unix seconds after which the call's own signed EIP-3009 transfer on a configured token is refused on chain (its `validBefore`); 0 for a call that is none. */
  readonly callDeadline: bigint
  /** The payment's identity: no two active submissions may spend the same one. */
  readonly identity: string
  /** What the call spends, when a delegate recognises it as a signed batch of its (`Delegate.callSpends`): one active submission each, whatever pays. */
  readonly callSpends?: string
  /** The account that pays: the signed transfer's `from`, or the batch's account. */
  readonly payer: Address
  /** The batch's terms, for a delegate batch. */
  readonly batch?: BatchTerms
  /** The delegate whose signed batches these are, named in the relay's texts. */
  readonly batchDelegate?: Pick<Delegate, 'name' | 'tools'>
}

/**
 * Reads a call and its payment batch as a delegate's two signed batches (payment only, then the
 * account's own calls), through the readers the delegate groups added. A call no reader recognises
 * is refused, saying what to use instead: a payment somewhere inside arbitrary code cannot be made safe.
 *
 * @example
 * readBatch(context, { to: account, data: signedExecute }, paymentBatch, usdc) // { form: 'batch', account, token, payee, amount, … }
 */
export function readBatch(context: RelayContext, call: RelayCall, paymentBatch: Hex | undefined, token: PaymentToken): RunnerRelay & { form: 'batch'; terms: BatchTerms; by: Delegate } {
  const { network } = context
  const payee = getAddress(network.config.payee)
  for (const delegate of context.delegates) {
    const terms = delegate.read(network, call, paymentBatch)
    if (!terms) continue
    if (!isAddressEqual(terms.token, token.address)) {
      throw new ToolError(`the ${delegate.name} batch pays in ${terms.token}, not in ${token.address} as the payment says: pass the payment ${delegate.tools.execute} returned`)
    }
    if (!isAddressEqual(terms.payee, payee)) throw new ToolError(`the ${delegate.name} batch pays ${terms.payee}, not the payee ${payee}`)
    if (!isAddressEqual(terms.target, getAddress(call.to))) throw new ToolError(`the ${delegate.name} batch for ${terms.account} goes to ${terms.target}, but the call goes to ${call.to}: pass the call ${delegate.tools.execute} returned`)
    return {
      form: 'batch',
      account: terms.account,
      delegate: terms.delegate,
      target: terms.target,
      ...(terms.callGasFloor === undefined ? {} : { callGasFloor: terms.callGasFloor }),
      paymentData: terms.paymentData,
      paymentGas: terms.paymentGas,
      data: call.data as Hex,
      token: terms.token,
      payee,
      amount: terms.amount,
      terms,
      by: delegate,
    }
  }
  const { delegates } = context
  throw new ToolError(
    'refused: a call that pays somewhere inside is not accepted, since it cannot be made safe. Pay one of two ways: ' +
      '{token, authorization, signature}, a signed EIP-3009 transfer to the payee (payment_authorization prepares it), ' +
      (delegates.length > 0
        ? `or ${delegates.map((delegate) => delegate.name).join(' or ')} batches, one that only pays and one of the account's calls (${delegates
            .map((delegate) => `${delegate.tools.batch} prepares both; ${delegate.tools.execute} returns the call and payment to submit`)
            .join('; ')})`
        : 'or a delegate batch (no delegate group is enabled on this server)'),
  )
}

/**
 * A submit request as the Runner will run it: a signed transfer to the payee then the call, or a
 * delegate's batch that pays first.
 *
 * @example
 * relayOfRequest(context, { call, payment: { token, authorization, signature } }, usdc) // { relay: { form: 'authorization', … }, amount: 150000n, … }
 */
export function relayOfRequest(context: RelayContext, call: RelayCall, payment: Payment, token: PaymentToken): RequestedRelay {
  const payee = getAddress(context.network.config.payee)
  const spends = callSpends(context, call, 'batch' in payment ? (payment.batch as Hex) : undefined)
  const signedCall = signedTransferOfCall(call, context.network.config.tokens.map((configured) => configured.address as Address))
  const callDeadline = signedCall?.validBefore ?? 0n
  if ('authorization' in payment) {
    const { authorization } = payment
    // What the Runner's calldata will encode, read here: no library's exception about it is the server's fault.
    // A longer one is a smart wallet's, which only the token can check (in the simulation).
    if (size(payment.signature as Hex) === 65) readSignature(payment.signature, 'payment.signature')
    for (const field of ['value', 'validAfter', 'validBefore'] as const) {
      if (BigInt(authorization[field]) > maxUint256) throw new ToolError(`payment.authorization.${field} is ${authorization[field]}, above 2²⁵⁶ − 1, the most a uint256 holds`)
    }
    if (!isAddressEqual(getAddress(authorization.to), payee)) {
      throw new PaymentRefusal(`the signed transfer pays ${authorization.to}, not the payee ${payee}: sign a transfer to the payee (payment_authorization prepares it)`, 'recipient')
    }
    return {
      relay: { form: 'authorization', call: { to: getAddress(call.to), data: call.data as Hex }, payment, payee },
      amount: BigInt(authorization.value),
      paymentDeadline: BigInt(authorization.validBefore),
      callDeadline,
      identity: `3009:${context.network.name}:${getAddress(payment.token)}:${getAddress(authorization.from)}:${authorization.nonce.toLowerCase()}`,
      payer: getAddress(authorization.from),
      ...spends,
    }
  }
  const relay = readBatch(context, call, payment.batch as Hex, token)
  if (BigInt(payment.amountBaseUnits) > relay.amount) {
    throw new ToolError(`the payment says ${payment.amountBaseUnits} base units but its payment batch pays ${relay.amount}: pass the payment ${relay.by.tools.execute} returned`)
  }
  const { terms, by, ...runnerRelay } = relay
  return { relay: runnerRelay, amount: relay.amount, paymentDeadline: terms.deadline, callDeadline, identity: terms.identity, payer: terms.account, batch: terms, batchDelegate: by, ...spends }
}

/**
 * What the call spends, as the first delegate that recognises it says (`{}` for a call none does);
 * a `ToolError` where a delegate refuses the call under this payment (`Delegate.callSpends`).
 * `quote` asks it too, so a call that submit would refuse is refused before anything is signed.
 *
 * @example
 * callSpends(context, { to: account, data: signedExecute }, undefined) // { callSpends: 'calibur:base:0x7099…79C8:8' }
 */
export function callSpends(context: RelayContext, call: RelayCall, paymentBatch: Hex | undefined): { callSpends?: string } {
  for (const delegate of context.delegates) {
    const spent = delegate.callSpends(context.network, call, paymentBatch)
    if (spent !== undefined) return { callSpends: spent }
  }
  return {}
}
