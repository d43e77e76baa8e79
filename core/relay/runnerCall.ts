import { decodeFunctionResult, encodeFunctionData, getAddress, parseEventLogs, parseSignature, type Address, type Hex, type Log } from 'viem'
import { runnerAbi } from '../../contracts/abi.ts'
import type { SignedTransferPayment } from './schemas.ts'

/** What the Runner does with a submission: its payment phase, then its call with a fixed stipend. */
export type RunnerRelay =
  | {
      /** A signed EIP-3009 transfer to the payee, then `call` (`to` zero: no call). */
      readonly form: 'authorization'
      readonly call: { readonly to: Address; readonly data: Hex }
      readonly payment: SignedTransferPayment
      readonly payee: Address
    }
  | {
      /** A delegate's two signed batches for `account`, both sent to `target`: the payment-only one, then the account's own calls. */
      readonly form: 'batch'
      readonly account: Address
      /** The delegate the account must be delegated to when the relay starts. */
      readonly delegate: Address
      /** The account itself, or the contract that makes it run its delegate's batches (a delegation manager, an EntryPoint). */
      readonly target: Address
      /** The least stipend `target` needs for the call phase (`BatchTerms.callGasFloor`). */
      readonly callGasFloor?: bigint
      readonly paymentData: Hex
      /** The most the payment batch may spend. */
      readonly paymentGas: bigint
      readonly data: Hex
      readonly token: Address
      readonly payee: Address
      readonly amount: bigint
    }

/**
 * The runner transaction's calldata for a relay with `callGas` as the call's stipend:
 * `relayWithAuthorization` or `relayBatch`.
 *
 * @example
 * encodeRunnerCall({ form: 'batch', account, delegate: calibur, target: account, paymentData, paymentGas: 150_000n, data: signedExecute, token: usdc, payee, amount: 150_000n }, 180_000n)
 */
export function encodeRunnerCall(relay: RunnerRelay, callGas: bigint): Hex {
  if (relay.form === 'batch') {
    const batches = { target: relay.target, payment: relay.paymentData, paymentGas: relay.paymentGas, data: relay.data }
    return encodeFunctionData({ abi: runnerAbi, functionName: 'relayBatch', args: [relay.account, relay.delegate, batches, callGas, relay.token, relay.payee, relay.amount] })
  }
  const { authorization } = relay.payment
  const { r, s, v, yParity } = parseSignature(relay.payment.signature as Hex)
  return encodeFunctionData({
    abi: runnerAbi,
    functionName: 'relayWithAuthorization',
    args: [
      getAddress(relay.call.to),
      relay.call.data,
      callGas,
      getAddress(relay.payment.token),
      relay.payee,
      BigInt(authorization.value),
      {
        from: getAddress(authorization.from),
        value: BigInt(authorization.value),
        validAfter: BigInt(authorization.validAfter),
        validBefore: BigInt(authorization.validBefore),
        nonce: authorization.nonce as Hex,
        v: Number(v ?? BigInt(yParity + 27)),
        r,
        s,
      },
    ],
  })
}

/** What the call phase did, as the Runner returns it (simulated) or logs it (`Relayed`). */
export interface CallOutcome {
  readonly callSucceeded: boolean
  readonly callGasUsed: bigint
  /** The head of the call's revert data (≤ 256 bytes) when it failed. */
  readonly reason: Hex
}

/**
 * Decodes a simulated relay's return data.
 *
 * @example
 * decodeRelayResult('relayBatch', await client.call({ … }).data) // { callSucceeded: true, callGasUsed: 151234n, reason: '0x' }
 */
export function decodeRelayResult(form: RunnerRelay['form'], data: Hex): CallOutcome {
  const [callSucceeded, callGasUsed, reason] =
    form === 'batch'
      ? decodeFunctionResult({ abi: runnerAbi, functionName: 'relayBatch', data })
      : decodeFunctionResult({ abi: runnerAbi, functionName: 'relayWithAuthorization', data })
  return { callSucceeded, callGasUsed, reason }
}

/** The Runner's `Relayed` event in a receipt's logs: what was received and whether the call succeeded. */
export function relayedEvent(logs: readonly Log[], runner: Address): { received: bigint; callSucceeded: boolean; reason: Hex } | undefined {
  const [relayed] = parseEventLogs({ abi: runnerAbi, eventName: 'Relayed', logs: logs.filter((log) => getAddress(log.address) === runner) as Log[] })
  return relayed && { received: relayed.args.received, callSucceeded: relayed.args.callSucceeded, reason: relayed.args.reason }
}

/** The Runner's fixed costs the relay prices with, mirrored from `contracts/Runner.sol`. */
export const RUNNER_SETTLE_GAS = 25_000n
/** The Runner's own work in `relayBatch` besides its two calls: the operator and delegation checks, two cold balance reads. */
export const RUNNER_BATCH_GAS = 20_000n
/** Stands in for a 65-byte signature when encoding calldata to count it: all nonzero bytes, the most it can cost. */
export const PLACEHOLDER_SIGNATURE: Hex = `0x${'ff'.repeat(65)}`
