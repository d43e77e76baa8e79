import { decodeFunctionData, getAddress, isAddressEqual, zeroAddress, zeroHash, type Address, type Hex } from 'viem'
import { readPaymentLeg, ToolError, type Delegate, type Network, type PaymentServices, type PaymentTerms, type RelayCall } from '../../core/plugin.ts'
import { caliburAbi } from './abi.ts'
import { caliburWords } from './errors.ts'
import { encodeOwnerExecute } from './executeCalldata.ts'
import type { CaliburOn } from './networkOptions.ts'
import { splitCaliburNonce } from './nonce.ts'
import type { CaliburBatch, CaliburCall } from './typedData.ts'

/**
 * The payment-only batch an account signs for Bruno (DESIGN §3, as revised): the one call
 * `token.transfer(payee, amount)`. The Runner runs it in a call of its own before the account's
 * batch of its own calls, so nothing those calls do — revert with megabytes, burn their gas — can
 * undo it.
 *
 * @example
 * paymentBatch(encodeTransfer({ token: usdc, to: payee, amount: 150_000n })) // { calls: [leg], revertOnFailure: true }
 */
export function paymentBatch(leg: CaliburCall): CaliburBatch {
  return { calls: [leg], revertOnFailure: true }
}

/**
 * The batch of the account's own calls, all or nothing, signed at the nonce after the payment's.
 *
 * @example
 * ownCallsBatch([approve, swap]) // { calls: [approve, swap], revertOnFailure: true }
 */
export function ownCallsBatch(calls: readonly CaliburCall[]): CaliburBatch {
  return { calls: [...calls], revertOnFailure: true }
}

/**
 * The most the Runner lets a Calibur payment batch spend: Calibur's signature check and nonce
 * write (from zero on a nonce key's first use) and FiatToken's transfer to a payee that may hold
 * nothing yet — ≈78,000 at the most on the devnet, so a failing payment costs at most this.
 */
export const CALIBUR_PAYMENT_GAS = 150_000n

/**
 * Checks a signed batch is a payment-only batch, as `paymentBatch` builds it, and reads what it pays:
 * one call, paying the payee in an accepted token, sending no ETH, all or nothing. Each refusal says
 * what is wrong and to build the batches with calibur_batch.
 *
 * @example
 * readPaymentBatch(network, payments, paymentTypedData.message.batchedCall) // { token, symbol: 'USDC', decimals: 6, amount: 150000n }
 */
export function readPaymentBatch(network: Network, payments: Pick<PaymentServices, 'token'>, batch: CaliburBatch): PaymentTerms {
  const payee = getAddress(network.config.payee)
  const refuse = (why: string) =>
    new ToolError(
      `the payment batch is not payment-only: ${why}. Bruno takes its payment in a batch of its own, the one call ` +
        `token.transfer(${payee}, amount), run before the batch of the account's calls: build both with calibur_batch`,
    )
  const [leg, ...rest] = batch.calls
  if (!leg || rest.length > 0) throw refuse(`it has ${batch.calls.length} calls, not 1`)
  if (!batch.revertOnFailure) throw refuse('it does not revert on failure (revertOnFailure must be true)')
  const terms = readPaymentLeg(network, payments, leg)
  if (typeof terms === 'string') throw refuse(terms)
  return terms
}

/**
 * Checks the two signed batches belong together as calibur_batch builds them: the account's calls
 * signed on the same nonce key, at the seq right after the payment's, so they can only run once the
 * payment has.
 *
 * @example
 * requireInOrder(paymentNonce, callsNonce) // throws unless callsNonce === paymentNonce + 1 on one key
 */
export function requireInOrder(paymentNonce: bigint, callsNonce: bigint): void {
  const payment = splitCaliburNonce(paymentNonce)
  const calls = splitCaliburNonce(callsNonce)
  if (payment.key !== calls.key || calls.seq !== payment.seq + 1n) {
    throw new ToolError(
      `the batch of the account's calls has nonce key ${calls.key} seq ${calls.seq}; it must be signed at key ${payment.key}, seq ${payment.seq + 1n}, ` +
        'right after the payment batch\'s, so that it runs only after the payment: build both with calibur_batch',
    )
  }
}

/** Calibur's signed `execute(SignedBatchedCall, bytes)` (DESIGN §4). */
const SIGNED_EXECUTE_SELECTOR = '0xc3c16ee4'

type SignedBatchedCallArgument = {
  batchedCall: { calls: readonly { to: Address; value: bigint; data: Hex }[]; revertOnFailure: boolean }
  nonce: bigint
  keyHash: Hex
  executor: Address
  deadline: bigint
}

// A signed execute's SignedBatchedCall, or undefined when the data is not one.
function decodeSignedExecute(data: Hex): SignedBatchedCallArgument | undefined {
  // Hex is case-blind: the schema takes either case, and so does the reader.
  const lower = data.toLowerCase() as Hex
  if (!lower.startsWith(SIGNED_EXECUTE_SELECTOR)) return undefined
  const decoded = decodeOrUndefined(() => decodeFunctionData({ abi: caliburAbi, data: lower }))
  if (!decoded || decoded.functionName !== 'execute' || decoded.args.length !== 2) return undefined
  return decoded.args[0] as unknown as SignedBatchedCallArgument
}

// Root key only, and an executor that lets the Runner run it.
function requireRelayable(network: Network, signed: SignedBatchedCallArgument, which: string): void {
  if (signed.keyHash.toLowerCase() !== zeroHash) {
    throw new ToolError(`the ${which} names a registered key (keyHash is not zero): Bruno relays batches signed by the account's own (root) key only`)
  }
  if (!isAddressEqual(signed.executor, zeroAddress) && !isAddressEqual(signed.executor, getAddress(network.config.runner.contract))) {
    throw new ToolError(`the ${which} may only be executed by ${signed.executor}, not by Bruno's Runner`)
  }
}

const batchOf = (signed: SignedBatchedCallArgument): CaliburBatch => ({
  calls: signed.batchedCall.calls.map((item) => ({ to: getAddress(item.to), value: item.value.toString(), data: item.data })),
  revertOnFailure: signed.batchedCall.revertOnFailure,
})

/**
 * Calibur as the relay knows it: the contract at `caliburOn(network)`, an account's next
 * nonce on sequence 0 (`getSeq(0)`), and its batches read back — a call to an account whose data is
 * Calibur's signed `execute` of the account's own calls, and a payment batch that is Calibur's signed
 * `execute` of a payment-only batch at the nonce before, both by the root key for any executor or the Runner.
 *
 * @example
 * caliburDelegate(services.payment, () => CALIBUR_ADDRESS).read(network, { to: account, data: signedExecute }, paymentBatch) // { account, token, payee, amount, … }
 */
export function caliburDelegate(payments: Pick<PaymentServices, 'token'>, caliburOn: CaliburOn): Delegate {
  return {
    ...caliburWords,
    address: (network) => getAddress(caliburOn(network)),
    nextNonce: (network, account) => network.client.readContract({ address: account, abi: caliburAbi, functionName: 'getSeq', args: [0n] }),
    callSpends(network, call) {
      const signed = decodeSignedExecute(call.data as Hex)
      return signed && `calibur:${network.name}:${getAddress(call.to)}:${signed.nonce}`
    },
    read(network, call: RelayCall, paymentData) {
      const calls = decodeSignedExecute(call.data as Hex)
      if (!calls) return undefined
      const account = getAddress(call.to)
      if (paymentData === undefined) {
        throw new ToolError('the payment has no `batch`: a Calibur call is paid by a signed payment-only batch, calibur_execute\'s payment.batch: pass the payment it returned')
      }
      const payment = decodeSignedExecute(paymentData)
      if (!payment) throw new ToolError('the payment\'s `batch` is not a signed Calibur execute: pass the payment calibur_execute returned')
      requireRelayable(network, payment, 'payment batch')
      requireRelayable(network, calls, 'batch of the account\'s calls')
      requireInOrder(payment.nonce, calls.nonce)
      const terms = readPaymentBatch(network, payments, batchOf(payment))
      const deadlines = [payment.deadline, calls.deadline].filter((deadline) => deadline !== 0n)
      return {
        account,
        delegate: getAddress(caliburOn(network)),
        target: account,
        paymentData,
        paymentGas: CALIBUR_PAYMENT_GAS,
        token: terms.token,
        payee: getAddress(network.config.payee),
        amount: terms.amount,
        deadline: deadlines.reduce((earliest, deadline) => (deadline < earliest ? deadline : earliest), deadlines[0] ?? 0n),
        identity: `calibur:${network.name}:${account}:${payment.nonce}`,
        // After the payment, as the Runner runs them: a call that spends what the payment took fails here too.
        ownCalls: { from: account, to: account, data: encodeOwnerExecute({ calls: [...batchOf(payment).calls, ...batchOf(calls).calls], revertOnFailure: true }) },
      }
    },
  }
}

function decodeOrUndefined<T>(decode: () => T): T | undefined {
  try {
    return decode()
  } catch {
    return undefined
  }
}
