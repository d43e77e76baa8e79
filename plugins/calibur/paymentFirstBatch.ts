import { decodeFunctionData, erc20Abi, getAddress, isAddressEqual, zeroAddress, zeroHash, type Address, type Hex } from 'viem'
import { paymentGuardCall, ToolError, type BatchPaymentReader, type Network, type PaymentServices, type RelayCall } from '../../core/plugin.ts'
import { caliburAbi } from './abi.ts'
import { caliburErrors } from './errors.ts'
import { encodeOwnerExecute } from './executeCalldata.ts'
import type { CaliburBatch, CaliburCall } from './typedData.ts'

/**
 * The batch an account signs for Bruno, payment first (DESIGN §3): the outer batch does not revert on
 * failure, so the payment leg stands on its own; its second call is the account's owner `execute`
 * of the account's own calls (atomic among themselves), opened by the Runner's payment guard so
 * they run only once the payee is paid.
 *
 * `{calls: [token.transfer(payee, amount), {to: 0 (the account), data: execute({calls: [guard, ...calls], revertOnFailure: true})}], revertOnFailure: false}`
 *
 * @example
 * paymentFirstBatch(encodeTransfer({ token: usdc, to: payee, amount: 150_000n }), paymentGuardCall(runner), calls)
 */
export function paymentFirstBatch(leg: CaliburCall, guard: CaliburCall, calls: readonly CaliburCall[]): CaliburBatch {
  const own: CaliburBatch = { calls: [guard, ...calls], revertOnFailure: true }
  return { calls: [leg, { to: zeroAddress, value: '0', data: encodeOwnerExecute(own) }], revertOnFailure: false }
}

/** What a payment-first batch pays, and the account's own calls (the guard left out). */
export interface PaymentFirstTerms {
  readonly token: Address
  readonly symbol: string
  readonly decimals: number
  readonly amount: bigint
  readonly calls: readonly CaliburCall[]
}

/**
 * Checks a signed batch is payment first, as `paymentFirstBatch` builds it, and reads its terms:
 * the outer batch carries on past failures and has two calls; the first pays the payee in an
 * accepted token, sending no ETH; the second runs on the account, sending no ETH, the account's
 * owner `execute` of an all-or-nothing batch whose first call is the Runner's payment guard.
 * Each refusal says what is wrong and to build the batch with calibur_batch.
 *
 * @example
 * readPaymentFirstBatch(network, payments, account, typedData.message.batchedCall) // { token, amount: 150000n, calls: […] }
 */
export function readPaymentFirstBatch(network: Network, payments: PaymentServices, account: Address, batch: CaliburBatch): PaymentFirstTerms {
  const payee = getAddress(network.config.payee)
  const refuse = (why: string) =>
    new ToolError(
      `the batch is not payment-first: ${why}. Bruno relays a batch whose first call pays ${payee} and whose own calls run after the ` +
        'Runner\'s payment guard, in a second call to the account (a failing call still pays): build it with calibur_batch',
    )
  if (batch.revertOnFailure) throw refuse('its outer batch reverts on failure (revertOnFailure must be false, so the payment stands alone)')
  const [leg, inner, ...rest] = batch.calls
  if (!leg || !inner || rest.length > 0) throw refuse(`it has ${batch.calls.length} calls, not 2 (the payment leg, then the account's own calls)`)

  let token
  try {
    token = payments.token(network.name, getAddress(leg.to))
  } catch {
    throw refuse(`its first call goes to ${leg.to}, not an accepted payment token`)
  }
  if (BigInt(leg.value) !== 0n) throw refuse('its first call sends ETH')
  const transfer = decodeOrUndefined(() => decodeFunctionData({ abi: erc20Abi, data: leg.data }))
  if (!transfer || transfer.functionName !== 'transfer') throw refuse('its first call is not token.transfer(payee, amount)')
  const [to, amount] = transfer.args
  if (!isAddressEqual(to, payee)) throw refuse(`its first call pays ${to}, not the payee`)
  if (amount === 0n) throw refuse('its first call pays nothing')

  if (!isAddressEqual(getAddress(inner.to), zeroAddress) && !isAddressEqual(getAddress(inner.to), account)) throw refuse(`its second call goes to ${inner.to}, not the account`)
  if (BigInt(inner.value) !== 0n) throw refuse('its second call sends ETH')
  const execute = decodeOrUndefined(() => decodeFunctionData({ abi: caliburAbi, data: inner.data }))
  if (!execute || execute.functionName !== 'execute' || execute.args.length !== 1) throw refuse('its second call is not the account\'s execute(BatchedCall)')
  const own = execute.args[0] as { calls: readonly { to: Address; value: bigint; data: Hex }[]; revertOnFailure: boolean }
  if (!own.revertOnFailure) throw refuse('the account\'s own calls are not all or nothing (revertOnFailure must be true)')
  const [guard, ...calls] = own.calls
  const expected = paymentGuardCall(getAddress(network.config.runner.contract))
  if (!guard || !isAddressEqual(guard.to, expected.to) || guard.value !== 0n || guard.data.toLowerCase() !== expected.data.toLowerCase()) {
    throw refuse(`the account's own calls do not open with the Runner's payment guard (${expected.to}.paymentGuard())`)
  }
  return {
    token: token.address,
    symbol: token.symbol,
    decimals: token.decimals,
    amount,
    calls: calls.map((call) => ({ to: getAddress(call.to), value: call.value.toString(), data: call.data })),
  }
}

/** Calibur's signed `execute(SignedBatchedCall, bytes)` (DESIGN §4). */
const SIGNED_EXECUTE_SELECTOR = '0xc3c16ee4'

/**
 * The relay's reader of Calibur batches: a call to an account whose data is Calibur's signed
 * `execute`, with a payment-first batch signed by the root key for any executor or the Runner.
 *
 * @example
 * caliburBatchReader(services.payment).read(network, { to: account, data: signedExecute }) // { account, token, payee, amount, … }
 */
export function caliburBatchReader(payments: PaymentServices): BatchPaymentReader {
  return {
    delegate: 'Calibur',
    errors: caliburErrors,
    read(network, call: RelayCall) {
      if (!call.data.toLowerCase().startsWith(SIGNED_EXECUTE_SELECTOR)) return undefined
      const decoded = decodeOrUndefined(() => decodeFunctionData({ abi: caliburAbi, data: call.data as Hex }))
      if (!decoded || decoded.functionName !== 'execute' || decoded.args.length !== 2) return undefined
      const [signed] = decoded.args as unknown as [
        { batchedCall: { calls: readonly { to: Address; value: bigint; data: Hex }[]; revertOnFailure: boolean }; nonce: bigint; keyHash: Hex; executor: Address; deadline: bigint },
      ]
      const account = getAddress(call.to)
      if (signed.keyHash.toLowerCase() !== zeroHash) throw new ToolError('the batch names a registered key (keyHash is not zero): Bruno relays batches signed by the account\'s own (root) key only')
      if (!isAddressEqual(signed.executor, zeroAddress) && !isAddressEqual(signed.executor, getAddress(network.config.runner.contract))) {
        throw new ToolError(`the batch may only be executed by ${signed.executor}, not by Bruno's Runner`)
      }
      const batch: CaliburBatch = {
        calls: signed.batchedCall.calls.map((item) => ({ to: getAddress(item.to), value: item.value.toString(), data: item.data })),
        revertOnFailure: signed.batchedCall.revertOnFailure,
      }
      const terms = readPaymentFirstBatch(network, payments, account, batch)
      return {
        account,
        delegate: getAddress(network.config.calibur),
        token: terms.token,
        payee: getAddress(network.config.payee),
        amount: terms.amount,
        deadline: signed.deadline,
        identity: `calibur:${network.name}:${account}:${signed.nonce}`,
        ownCalls: { from: account, to: account, data: encodeOwnerExecute({ calls: [...terms.calls], revertOnFailure: true }) },
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
