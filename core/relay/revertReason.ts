import { BaseError, decodeErrorResult, formatUnits, type Abi, type Hex } from 'viem'
import { caliburCompatibleAbi, runnerAbi } from '../../contracts/abi.ts'

const KNOWN_ERRORS = [...runnerAbi, ...caliburCompatibleAbi].filter((item) => item.type === 'error') as Abi

/**
 * Says in words why a simulated runner transaction reverts: the Runner's own errors, Calibur's,
 * and `Error(string)` reasons of the call (a token's "transfer amount exceeds balance"), nested
 * through `CallReverted`/`CallFailed` to the innermost reason.
 *
 * @example
 * revertReason(error, 6, 'USDC') // 'payment short: the payee would receive 0.1 USDC of the 0.15 USDC required'
 */
export function revertReason(error: unknown, decimals: number, symbol: string): string | undefined {
  const data = revertData(error)
  if (data === undefined) return undefined
  return describeRevertData(data, decimals, symbol)
}

/**
 * Says in words what revert data means (the Runner's errors, Calibur's, `Error(string)`, `Panic`).
 *
 * @example
 * describeRevertData('0x08c379a0…', 6, 'USDC') // 'the call reverted: ERC20: transfer amount exceeds balance'
 */
export function describeRevertData(data: Hex, decimals: number, symbol: string): string {
  if (data === '0x') return 'the call reverted without a reason'
  let decoded
  try {
    decoded = decodeErrorResult({ abi: KNOWN_ERRORS, data })
  } catch {
    return `the call reverted with unrecognised data ${data.slice(0, 10)}`
  }
  const args = (decoded.args ?? []) as readonly unknown[]
  switch (decoded.errorName) {
    case 'Error':
      return `the call reverted: ${String(args[0])}`
    case 'Panic':
      return `the call panicked (code ${String(args[0])})`
    case 'PaymentShort':
      return `payment short: the payee would receive ${formatUnits(args[0] as bigint, decimals)} ${symbol} of the ${formatUnits(args[1] as bigint, decimals)} ${symbol} required`
    case 'CallReverted':
    case 'CallFailed':
      return describeRevertData(args[0] as Hex, decimals, symbol)
    case 'InvalidSignature':
      return 'the signature does not recover to the account (InvalidSignature)'
    case 'InvalidNonce':
      return 'the batch nonce is not the account\'s current one: it was used already or skips ahead (InvalidNonce)'
    case 'SignatureExpired':
      return 'the batch\'s deadline has passed (SignatureExpired)'
    case 'Unauthorized':
      return 'the batch names another executor (Unauthorized)'
    case 'PayerHasCode':
      return `the payer ${String(args[0])} has code (a contract, or an account delegated by EIP-7702): the token would run it inside the payment. A signed EIP-3009 transfer must come from a plain account; a delegated account pays with a Calibur batch (calibur_batch)`
    case 'NotDelegated':
      return `the account ${String(args[0])} is not delegated to ${String(args[1])}: the batch can only run there (delegate it first, or pass its signed 7702 authorization in authorizationList)`
    case 'GasShort':
      return `the gas limit cannot give the call its whole stipend (GasShort)`
    case 'NotInBatchRelay':
      return 'the payment guard was called outside a relay (NotInBatchRelay)'
    case 'NotOperator':
      return 'the runner is not the Runner contract\'s operator (a deployment error)'
    default:
      return `the call reverted with ${decoded.errorName}(${args.map(String).join(', ')})`
  }
}

/** The revert data viem found in a failed eth_call / eth_estimateGas, wherever it nests it. */
function revertData(error: unknown): Hex | undefined {
  if (!(error instanceof BaseError)) return undefined
  const found = error.walk((cause) => typeof (cause as { data?: unknown }).data === 'string')
  const data = (found as { data?: unknown } | null)?.data
  return typeof data === 'string' && /^0x[0-9a-fA-F]*$/.test(data) ? (data as Hex) : undefined
}
