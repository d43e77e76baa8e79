import { BaseError, decodeErrorResult, formatUnits, type Abi, type Hex } from 'viem'
import { runnerAbi } from '../../contracts/abi.ts'
import { batchToolNames, type DelegateWords } from './delegate.ts'
import type { PaymentProblem } from './paymentRefusal.ts'
import { payerHasCodeWords, walletFactoryWords } from './paymentToken.ts'

const RUNNER_ERRORS = runnerAbi.filter((item) => item.type === 'error') as Abi

/**
 * Words for `Error(string)` reasons that name only a symptom, from contracts any relayed call may
 * meet whichever group built it. Kept in core, not given by the uniswap group: the reasons are
 * those of Uniswap's TransferHelper, which SwapRouter02 and many routers and builders' calldata
 * share (a swap from any builder meets them, not only uniswap_swap_to_eth's), and core already
 * prices through Uniswap's pools; a plugin vocabulary (`ErrorVocabulary`) decodes custom errors of
 * a delegate, which these are not.
 */
function wellKnownReason(reason: string, delegates: readonly DelegateWords[]): string | undefined {
  switch (reason) {
    case 'STF': {
      const tools = batchToolNames(delegates) ?? 'a delegate group\'s batch tool'
      return (
        'Uniswap\'s TransferHelper: safeTransferFrom failed. The router could not take the input token: the account\'s ' +
        `allowance to the router is missing or short (or its balance is). Approve the router first: ${tools}'s ` +
        '`approvals` ({token, spender: the router, amountBaseUnits}, as uniswap_swap_to_eth returns them) adds the approve where it ' +
        'is short, or put erc20_approve\'s call before the swap'
      )
    }
    case 'STE':
      return 'Uniswap\'s TransferHelper: safeTransferETH failed. The ETH could not be sent to the recipient'
    case 'ST':
      return 'Uniswap\'s TransferHelper: safeTransfer failed. The router holds too little of the token to send'
    case 'SA':
      return 'Uniswap\'s TransferHelper: safeApprove failed'
    default:
      return undefined
  }
}

/**
 * A contract's errors and how to say them in words: a delegate's group gives the relay its own
 * (`Delegate.errors`), so the relay describes them without knowing the delegate.
 */
export interface ErrorVocabulary {
  /** The error items of the contract's ABI. */
  readonly abi: Abi
  /** The words for one of them, or `undefined` for the generic form; `nested` describes wrapped revert data. */
  describe(name: string, args: readonly unknown[], nested: (data: Hex) => string): string | undefined
}

/**
 * Says in words why a simulated runner transaction reverts: the Runner's own errors, those of the
 * `vocabularies` given (a delegate's), and `Error(string)` reasons of the call (a token's "transfer
 * amount exceeds balance"), nested through wrapping errors to the innermost reason.
 *
 * @example
 * revertReason(error, 6, 'USDC') // 'payment short: the payee would receive 0.1 USDC of the 0.15 USDC required'
 */
export function revertReason(error: unknown, decimals: number, symbol: string, delegates: readonly DelegateWords[] = []): string | undefined {
  const data = revertData(error)
  if (data === undefined) return undefined
  return describeRevertData(data, decimals, symbol, delegates)
}

/**
 * Says in words what revert data means (the Runner's errors, the delegates', `Error(string)`, `Panic`);
 * a text that sends the caller to a batch names the delegates' tools.
 *
 * @example
 * describeRevertData('0x08c379a0…', 6, 'USDC') // 'the call reverted: ERC20: transfer amount exceeds balance'
 */
export function describeRevertData(data: Hex, decimals: number, symbol: string, delegates: readonly DelegateWords[] = []): string {
  if (data === '0x') return 'the call reverted without a reason'
  const nested = (inner: Hex) => describeRevertData(inner, decimals, symbol, delegates)
  const vocabularies = delegates.map((delegate) => delegate.errors)
  let decoded
  try {
    decoded = decodeErrorResult({ abi: [...RUNNER_ERRORS, ...vocabularies.flatMap((vocabulary) => vocabulary.abi)], data })
  } catch {
    return `the call reverted with unrecognised data ${data.slice(0, 10)}`
  }
  const args = (decoded.args ?? []) as readonly unknown[]
  for (const vocabulary of vocabularies) {
    const words = vocabulary.describe(decoded.errorName, args, nested)
    if (words !== undefined) return words
  }
  switch (decoded.errorName) {
    case 'Error': {
      const reason = String(args[0])
      const known = wellKnownReason(reason, delegates)
      return `the call reverted: ${reason}${known ? ` (${known})` : ''}`
    }
    case 'Panic':
      return `the call panicked (code ${String(args[0])})`
    case 'PaymentShort':
      return `payment short: the payee would receive ${formatUnits(args[0] as bigint, decimals)} ${symbol} of the ${formatUnits(args[1] as bigint, decimals)} ${symbol} required`
    case 'PayerHasCode':
      return payerHasCodeWords(String(args[0]), delegates)
    case 'WalletFactoryNotAllowed':
      return walletFactoryWords(String(args[0]))
    case 'PayerNotDeployed':
      return `the ERC-6492 signature's factory call did not deploy the payer ${String(args[0])}: it reverted, or deployed another address (wrap the signature with the factory and calldata that deploy the paying wallet)`
    case 'NotDelegated':
      return `the account ${String(args[0])} is not delegated to ${String(args[1])}: the batch can only run there (delegate it first, or pass its signed 7702 authorization in authorizationList)`
    case 'GasShort':
      return `the gas limit cannot give the call its whole stipend (GasShort)`
    case 'PaymentFailed':
      return `the payment batch failed: ${nested(args[0] as Hex)}`
    case 'NotOperator':
      // Met inside a call: the call called the Runner (as the Runner itself: not an operator).
      return 'the call calls Bruno\'s Runner contract, which only its operators may call: a relayed call runs as the Runner and cannot call it'
    default:
      return `the call reverted with ${decoded.errorName}(${args.map(String).join(', ')})`
  }
}

/**
 * A token's refusal of a signed transfer, by its words (FiatToken's, and the common ERC-20 ones),
 * and the payment field it is about with how to mend it.
 */
const AUTHORIZATION_REFUSALS: readonly (readonly [RegExp, string, PaymentProblem])[] = [
  [
    /invalid signature|invalid signer|signature mismatch/i,
    "payment.signature is not payment.authorization.from's signature of payment.authorization (another key signed it, or a field changed after signing): " +
      "sign payment_authorization's typedData unchanged, with from's own key",
    'signature',
  ],
  [/used or canceled|is used|canceled/i, 'payment.authorization.nonce was used already: sign a new payment (payment_authorization gives a fresh nonce)', 'nonce'],
  [/not yet valid/i, 'payment.authorization.validAfter is still in the future', 'valid_after'],
  [/expired/i, 'payment.authorization.validBefore has passed: sign a new payment', 'valid_before'],
  [/exceeds balance|insufficient balance/i, 'payment.authorization.from holds less than payment.authorization.value', 'funds'],
  [/blacklisted/i, 'payment.authorization.from (or the payee) is blacklisted by the token', 'payer'],
]

/**
 * Says why a runner transaction reverted as a whole, naming the payment's field when the payment
 * is why (`byPayment`). Only the payment phase and the Runner's own checks revert it (a failing call is reported,
 * never reverts it), so a reason the Runner does not raise itself is the payment's: the token's
 * refusal of a signed transfer (`form` 'authorization'), or the payment batch's ('batch').
 *
 * @example
 * runnerRevertReason(error, 'authorization', 6, 'USDC')
 * // { words: 'the token refused the payment: FiatTokenV2: invalid signature. payment.signature is not …', byPayment: true }
 */
export function runnerRevertReason(
  error: unknown,
  form: 'authorization' | 'batch',
  decimals: number,
  symbol: string,
  delegates: readonly DelegateWords[] = [],
): { readonly words: string; readonly byPayment: boolean; readonly problem?: PaymentProblem } | undefined {
  const data = revertData(error)
  if (data === undefined) return undefined
  const reason = describeRevertData(data, decimals, symbol, delegates)
  let name: string | undefined
  let args: readonly unknown[] = []
  try {
    const decoded = decodeErrorResult({ abi: RUNNER_ERRORS, data })
    name = decoded.errorName
    args = (decoded.args ?? []) as readonly unknown[]
  } catch {
    name = undefined
  }
  switch (name) {
    case 'NotOperator':
      // The runner transaction itself refused: the sending key is not the Runner's operator.
      return { words: 'the runner is not the Runner contract\'s operator (a deployment error)', byPayment: false }
    case 'GasShort':
    case 'NotDelegated':
      return { words: reason, byPayment: false }
    case 'PaymentShort':
      return { words: `the payment is short (${form === 'authorization' ? 'payment.authorization.value' : 'payment.amountBaseUnits, as payment.batch transfers it'}): ${reason}`, byPayment: true, problem: 'value' }
    case 'PayerHasCode':
    case 'WalletFactoryNotAllowed':
    case 'PayerNotDeployed':
      return { words: `the payment's payer (payment.authorization.from) cannot pay by signed transfer: ${reason}`, byPayment: true, problem: 'payer' }
    case 'PaymentFailed':
      return { words: `the payment batch (payment.batch) failed: ${describeRevertData(args[0] as Hex, decimals, symbol, delegates)}`, byPayment: true }
  }
  if (form === 'batch') return { words: reason, byPayment: true }
  const tokenWords = reason.replace(/^the call reverted: /, '')
  const known = AUTHORIZATION_REFUSALS.find(([pattern]) => pattern.test(tokenWords))
  const words = `the token refused the payment: ${tokenWords}. ${known?.[1] ?? "Check payment.authorization and payment.signature against payment_authorization's typedData"}`
  return { words, byPayment: true, ...(known ? { problem: known[2] } : {}) }
}

/** The revert data viem found in a failed eth_call / eth_estimateGas, wherever it nests it. */
export function revertData(error: unknown): Hex | undefined {
  if (!(error instanceof BaseError)) return undefined
  const found = error.walk((cause) => typeof (cause as { data?: unknown }).data === 'string')
  const data = (found as { data?: unknown } | null)?.data
  return typeof data === 'string' && /^0x[0-9a-fA-F]*$/.test(data) ? (data as Hex) : undefined
}
