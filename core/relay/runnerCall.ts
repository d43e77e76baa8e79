import { decodeFunctionData, decodeFunctionResult, encodeFunctionData, getAddress, parseEventLogs, parseSignature, serializeSignature, size, type Address, type Hex, type Log } from 'viem'
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
 * The Runner's `Charge`: what the relay costs the runner, priced in the payment's token, and the
 * gas the payee's refund of the rest may use (contracts/Runner.sol, `_settle`).
 */
export interface RunnerCharge {
  readonly baseGas: bigint
  readonly floorGas: bigint
  readonly l1FeeWei: bigint
  readonly unitsPerEther: bigint
  readonly markupBps: bigint
  /** 0: no refund, the payee keeps the whole payment. */
  readonly refundGas: bigint
}

/** The charge that refunds nothing: the payee keeps the whole payment (the Runner skips its settlement arithmetic). */
export const KEEP_PAYMENT: RunnerCharge = { baseGas: 0n, floorGas: 0n, l1FeeWei: 0n, unitsPerEther: 0n, markupBps: 0n, refundGas: 0n }

/**
 * The runner transaction's calldata for a relay with `callGas` as the call's stipend and `charge`
 * for its settlement: `relayWithAuthorization` or `relayBatch`.
 *
 * @example
 * encodeRunnerCall({ form: 'batch', account, delegate: calibur, target: account, paymentData, paymentGas: 150_000n, data: signedExecute, token: usdc, payee, amount: 150_000n }, 180_000n)
 */
export function encodeRunnerCall(relay: RunnerRelay, callGas: bigint, charge: RunnerCharge = KEEP_PAYMENT): Hex {
  if (relay.form === 'batch') {
    const batches = { target: relay.target, payment: relay.paymentData, paymentGas: relay.paymentGas, data: relay.data }
    return encodeFunctionData({
      abi: runnerAbi,
      functionName: 'relayBatch',
      args: [relay.account, relay.delegate, batches, callGas, relay.token, relay.payee, relay.amount, charge],
    })
  }
  const { authorization } = relay.payment
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
        signature: tokenSignature(relay.payment.signature as Hex),
      },
      charge,
    ],
  })
}

/**
 * A payment's signature as the token checks it: a 65-byte ECDSA signature with v as 27 or 28 (a
 * client may end it with the y parity, 0 or 1, which FiatToken's ecrecover refuses); any other, a
 * wallet's ERC-1271 signature or an ERC-6492 wrapper, unchanged.
 *
 * @example
 * tokenSignature('0x…00') // '0x…1b'
 */
export function tokenSignature(signature: Hex): Hex {
  if (size(signature) !== 65) return signature
  return serializeSignature(parseSignature(signature))
}

/**
 * The charge a runner transaction's calldata carries (its last argument), or undefined for calldata
 * that is not a relay.
 *
 * @example
 * signedCharge(parseTransaction(transaction.raw).data!)?.l1FeeWei // 1_250_000_000_000n
 */
export function signedCharge(data: Hex): RunnerCharge | undefined {
  try {
    const decoded = decodeFunctionData({ abi: runnerAbi, data })
    return decoded.functionName === 'relayBatch' || decoded.functionName === 'relayWithAuthorization' ? decoded.args[7] : undefined
  } catch {
    return undefined
  }
}

/** What the call phase did, as the Runner returns it (simulated) or logs it (`Relayed`). */
export interface CallOutcome {
  readonly callSucceeded: boolean
  readonly callGasUsed: bigint
  /** The head of the call's revert data (≤ 256 bytes) when it failed. */
  readonly reason: Hex
  /** The gas the payee's refund took (its call's own cost included), 0 when no refund was made. */
  readonly refundGasUsed: bigint
}

/**
 * Decodes a simulated relay's return data.
 *
 * @example
 * decodeRelayResult('batch', await client.call({ … }).data) // { callSucceeded: true, callGasUsed: 151234n, reason: '0x', refundGasUsed: 0n }
 */
export function decodeRelayResult(form: RunnerRelay['form'], data: Hex): CallOutcome {
  const [callSucceeded, callGasUsed, reason, refundGasUsed] =
    form === 'batch'
      ? decodeFunctionResult({ abi: runnerAbi, functionName: 'relayBatch', data })
      : decodeFunctionResult({ abi: runnerAbi, functionName: 'relayWithAuthorization', data })
  return { callSucceeded, callGasUsed, reason, refundGasUsed }
}

/** The Runner's `Relayed` event in a receipt's logs: what was received, charged and refunded, and whether the call succeeded. */
export function relayedEvent(
  logs: readonly Log[],
  runner: Address,
): { received: bigint; charged: bigint; refunded: bigint; callSucceeded: boolean; reason: Hex } | undefined {
  const [relayed] = parseEventLogs({ abi: runnerAbi, eventName: 'Relayed', logs: logs.filter((log) => getAddress(log.address) === runner) as Log[] })
  if (!relayed) return undefined
  const { received, charged, refunded, callSucceeded, reason } = relayed.args
  return { received, charged, refunded, callSucceeded, reason }
}

/** The Runner's fixed costs the relay prices with, mirrored from `contracts/Runner.sol`. */
export const RUNNER_SETTLE_GAS = 25_000n
/** What a relay from a lane besides the first costs more: the Runner reads `isOperator` (a cold slot, 2,100, and its hashing). */
export const RUNNER_OPERATOR_SET_GAS = 2_200n
/** The Runner's own work in `relayBatch` besides its two calls: the operator and delegation checks, two cold balance reads. */
export const RUNNER_BATCH_GAS = 20_000n
/** Stands in for a 65-byte signature when encoding calldata to count it: all nonzero bytes, the most it can cost. */
export const PLACEHOLDER_SIGNATURE: Hex = `0x${'ff'.repeat(65)}`
