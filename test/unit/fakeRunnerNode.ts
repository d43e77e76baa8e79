import { decodeFunctionData, encodeAbiParameters, encodeErrorResult, encodeFunctionData, encodeFunctionResult, getAddress, hexToBigInt, parseAbi, toFunctionSelector, toHex, type Address, type Hex } from 'viem'
import type { NetworkConfig } from '../../config/schema.ts'
import type { RelayContext } from '../../core/relay/context.ts'
import type { Delegate } from '../../core/relay/delegate.ts'
import type { RunnerCharge } from '../../core/relay/runnerCall.ts'
import { STRANGER } from '../../core/relay/paymentPin.ts'
import { SqliteSubmissionStore } from '../../core/store/sqliteStore.ts'
import { fakeClient, fakeNetwork, networkConfig, type NodeAnswer, type SeenRequest } from './fakeChain.ts'
import { fakeDelegate } from '../fixtures/fakeDelegate.ts'

// A node for the relay's operations (quote, submit, prepareRunnerTransaction, the account view):
// the latest block, the fee tip, the chain id, the Runner contract's `relayWithAuthorization` /
// `relayBatch` answered by the test, estimates, balances, the OP-stack oracle. The Runner's
// functions and errors are written from contracts/Runner.sol, not taken from Bruno's ABI.

export const runnerFunctions = parseAbi([
  'struct Authorization { address from; uint256 value; uint256 validAfter; uint256 validBefore; bytes32 nonce; bytes signature; }',
  'struct Charge { uint256 baseGas; uint256 floorGas; uint256 l1FeeWei; uint256 unitsPerEther; uint256 markupBps; uint256 refundGas; }',
  'function relayWithAuthorization(address target, bytes data, uint256 callGas, address token, address payee, uint256 amount, Authorization authorization, Charge charge) returns (bool callSucceeded, uint256 callGasUsed, bytes reason, uint256 refundGasUsed)',
  'function relayBatch(address account, address delegate, (address target, bytes payment, uint256 paymentGas, bytes data) batches, uint256 callGas, address token, address payee, uint256 amount, Charge charge) returns (bool callSucceeded, uint256 callGasUsed, bytes reason, uint256 refundGasUsed)',
])

export const runnerErrors = parseAbi([
  'error PaymentShort(uint256 received, uint256 required)',
  'error GasShort(uint256 available, uint256 required)',
  'error PaymentFailed(bytes reason)',
  'error Error(string)',
])

const oracleAbi = parseAbi(['function getL1Fee(bytes _data) view returns (uint256)'])
const tokenAbi = parseAbi(['function authorizationState(address authorizer, bytes32 nonce) view returns (bool)', 'function balanceOf(address owner) view returns (uint256)'])
const [AUTHORIZATION_STATE, BALANCE_OF] = [toFunctionSelector(tokenAbi[0]), toFunctionSelector(tokenAbi[1])]
/** `runner()`: what a quote asks the payee, to know whether it refunds (a PayeeVault of this Runner). */
const RUNNER_OF_VAULT = toFunctionSelector('function runner()')
export const GAS_PRICE_ORACLE = '0x420000000000000000000000000000000000000F'

/** `Error(string)` revert data. */
export const errorString = (reason: string): Hex => encodeErrorResult({ abi: runnerErrors, errorName: 'Error', args: [reason] })

/** What the node answers for a reverting eth_call / eth_estimateGas (geth's form: code 3 with the data). */
export function revert(data: Hex): never {
  throw Object.assign(new Error('execution reverted'), { code: 3, data })
}

/** An address from a number. */
export const a = (n: number): Address => getAddress(`0x${n.toString(16).padStart(40, '0')}`)

/** One call to the Runner contract as the node saw it. */
export interface RunnerRequest {
  readonly method: 'eth_call' | 'eth_estimateGas'
  readonly functionName: 'relayWithAuthorization' | 'relayBatch'
  readonly args: readonly unknown[]
  readonly callGas: bigint
  readonly from: Address
  readonly gas?: bigint
  readonly maxFeePerGas?: bigint
  readonly maxPriorityFeePerGas?: bigint
  readonly authorizationList?: unknown
  readonly blockTag: unknown
  readonly data: Hex
}

export interface Outcome {
  readonly callSucceeded: boolean
  readonly callGasUsed: bigint
  readonly reason?: Hex
  /** What the payee's refund took; 0 (none made) when not given. */
  readonly refundGasUsed?: bigint
}

export interface RunnerNodeOptions {
  readonly config?: NetworkConfig
  readonly chainId?: number
  readonly blockGasLimit?: bigint
  readonly baseFeePerGas?: bigint
  readonly tip?: bigint
  /** The Runner's answer to an eth_call (throw with `revert` for a revert). */
  readonly relay?: (request: RunnerRequest) => Outcome
  /** The node's estimate of a Runner transaction. */
  readonly estimate?: (request: RunnerRequest) => bigint
  /** The node's estimate of anything else (a quote's call from the Runner). */
  readonly estimateOther?: (transaction: Record<string, unknown>, blockTag: unknown) => bigint
  /**
   * Whether the payment tokens take signed transfers: they answer `authorizationState` (false), as
   * FiatToken does; without (false), they answer nothing, as WETH9's fallback does. Default true.
   */
  readonly signedTransfers?: boolean
  /** A token's `balanceOf` (default 10³⁰: every payer holds enough). */
  readonly tokenBalance?: (token: Address, holder: Address) => bigint
  /** The payee is the PayeeVault of this Runner (its `runner()` answer); absent: the payee is an account. */
  readonly payeeRunner?: Address
  /** A payment batch sent by a stranger (submit's pin check) runs: an unpinned payment. Absent, it reverts, as a pinned one does. */
  readonly paymentRunsForAnyone?: boolean
  /** eth_call to other contracts. */
  readonly otherCall?: NodeAnswer
  readonly balance?: (address: string) => bigint
  /** Every account's EOA nonce (an authorization's signer); unset, the node does not answer it. */
  readonly eoaNonce?: number
  /** The code of an account (default none: `0x`). */
  readonly code?: (account: Address) => Hex | undefined
  /** GasPriceOracle.getL1Fee's answer. */
  readonly l1Fee?: bigint
  /** Awaited before the latest block is answered (to see what leaves in the same batch). */
  readonly blockGate?: () => Promise<void>
}

export function runnerNode(options: RunnerNodeOptions = {}) {
  const config = options.config ?? networkConfig()
  const runner = getAddress(config.runner.contract)
  const runnerRequests: RunnerRequest[] = []
  const oracleAsked: Hex[] = []
  const read = (method: 'eth_call' | 'eth_estimateGas', params: readonly unknown[]): RunnerRequest => {
    const transaction = params[0] as Record<string, string | undefined> & { authorizationList?: unknown }
    const { functionName, args } = decodeFunctionData({ abi: runnerFunctions, data: transaction.data as Hex })
    const request: RunnerRequest = {
      method,
      functionName,
      args,
      callGas: (functionName === 'relayBatch' ? args[3] : args[2]) as bigint,
      from: getAddress(transaction.from!),
      ...(transaction.gas ? { gas: hexToBigInt(transaction.gas as Hex) } : {}),
      ...(transaction.maxFeePerGas ? { maxFeePerGas: hexToBigInt(transaction.maxFeePerGas as Hex) } : {}),
      ...(transaction.maxPriorityFeePerGas ? { maxPriorityFeePerGas: hexToBigInt(transaction.maxPriorityFeePerGas as Hex) } : {}),
      ...(transaction.authorizationList ? { authorizationList: transaction.authorizationList } : {}),
      blockTag: params[1],
      data: transaction.data as Hex,
    }
    runnerRequests.push(request)
    return request
  }
  const block = () => ({
    number: '0x10',
    hash: `0x${'ab'.repeat(32)}`,
    timestamp: '0x3e8',
    transactions: [],
    gasLimit: toHex(options.blockGasLimit ?? 30_000_000n),
    baseFeePerGas: toHex(options.baseFeePerGas ?? 1_000_000_000n),
  })
  const isRunner = (to: unknown) => typeof to === 'string' && to.toLowerCase() === runner.toLowerCase()
  const { client, seen } = fakeClient({
    eth_chainId: () => toHex(options.chainId ?? config.chainId),
    eth_getBlockByNumber: async () => {
      await options.blockGate?.()
      return block()
    },
    eth_maxPriorityFeePerGas: () => toHex(options.tip ?? 1_000_000n),
    eth_getBalance: ({ params }) => toHex(options.balance ? options.balance(params[0] as string) : 10n ** 18n),
    // Only a node that knows the accounts (an authorization's signer) answers for them.
    ...(options.eoaNonce === undefined ? {} : { eth_getTransactionCount: () => toHex(options.eoaNonce!) }),
    // Every account has no code (a signed transfer's payer is a plain account) unless the test gives some.
    eth_getCode: ({ params }) => options.code?.(getAddress(params[0] as string)) ?? '0x',
    eth_call: (request) => {
      const { to, data, from } = request.params[0] as { to: string; data: Hex; from?: string }
      if (from !== undefined && getAddress(from) === STRANGER) {
        if (options.paymentRunsForAnyone) return '0x'
        revert('0x')
      }
      if (isRunner(to)) {
        const seenCall = read('eth_call', request.params)
        const outcome = options.relay ? options.relay(seenCall) : { callSucceeded: true, callGasUsed: 100_000n }
        return encodeFunctionResult({ abi: runnerFunctions, functionName: seenCall.functionName, result: [outcome.callSucceeded, outcome.callGasUsed, outcome.reason ?? '0x', outcome.refundGasUsed ?? 0n] })
      }
      if (to.toLowerCase() === GAS_PRICE_ORACLE.toLowerCase()) {
        const { args } = decodeFunctionData({ abi: oracleAbi, data })
        oracleAsked.push(args[0])
        return encodeFunctionResult({ abi: oracleAbi, functionName: 'getL1Fee', result: options.l1Fee ?? 0n })
      }
      if (data.startsWith(AUTHORIZATION_STATE)) return options.signedTransfers === false ? '0x' : encodeFunctionResult({ abi: tokenAbi, functionName: 'authorizationState', result: false })
      if (data.startsWith(BALANCE_OF) && !options.otherCall) {
        const { args } = decodeFunctionData({ abi: tokenAbi, data })
        return encodeFunctionResult({ abi: tokenAbi, functionName: 'balanceOf', result: options.tokenBalance ? options.tokenBalance(getAddress(to), args[0] as Address) : 10n ** 30n })
      }
      // `runner()` of the payee: a PayeeVault answers its Runner; an account has no code (no data).
      if (data.startsWith(RUNNER_OF_VAULT)) return options.payeeRunner ? encodeAbiParameters([{ type: 'address' }], [options.payeeRunner]) : '0x'
      if (options.otherCall) return options.otherCall(request)
      throw new Error(`no contract at ${to}`)
    },
    eth_estimateGas: ({ params }) => {
      const transaction = params[0] as Record<string, unknown>
      if (isRunner(transaction.to)) return toHex((options.estimate ?? (() => 300_000n))(read('eth_estimateGas', params)))
      if (!options.estimateOther) throw new Error(`no estimate for ${String(transaction.to)}`)
      return toHex(options.estimateOther(transaction, params[1]))
    },
  })
  const network = fakeNetwork(client, config)
  return { client, seen, network, config, runner, runnerRequests, oracleAsked }
}

/** The methods the node was asked, in order. */
export const methods = (seen: readonly SeenRequest[]) => seen.map((request) => request.method)

/**
 * A relay context on `node`, with a store of its own (SQLite in memory) and a count of the runner's
 * wake-ups. Its delegates default to one named as the calibur group's that reads no call, as a
 * deployment serving calibur has: the relay's texts name its tools.
 */
export function relayContext(node: ReturnType<typeof runnerNode>, operator: Address, delegates: Delegate[] = [fakeDelegate({ errors: { abi: [], describe: () => undefined }, read: () => undefined })]) {
  const store = new SqliteSubmissionStore(':memory:')
  let wakes = 0
  const context: RelayContext = { network: node.network, store, operator, delegates, wake: () => void wakes++ }
  return { context, store, wakes: () => wakes }
}

/** A 65-byte signature, r and s non-zero, v 27. */
/** Runner.sol's `Charge` that asks no refund: the relay keeps every payment for now. */
export const KEPT = { baseGas: 0n, floorGas: 0n, l1FeeWei: 0n, unitsPerEther: 0n, markupBps: 0n, refundGas: 0n } as const

export const SIGNATURE: Hex = `0x${'11'.repeat(32)}${'22'.repeat(32)}1b`

/** The Runner's calldata for a signed transfer then a call, encoded from Runner.sol's signature, keeping the whole payment. */
export function relayWithAuthorizationData(
  call: { to: Address; data: Hex },
  callGas: bigint,
  payment: { token: Address; from: Address; value: bigint; validAfter: bigint; validBefore: bigint; nonce: Hex; signature: Hex },
  payee: Address,
  charge: RunnerCharge = KEPT,
): Hex {
  return encodeFunctionData({
    abi: runnerFunctions,
    functionName: 'relayWithAuthorization',
    args: [
      call.to,
      call.data,
      callGas,
      payment.token,
      payee,
      payment.value,
      { from: payment.from, value: payment.value, validAfter: payment.validAfter, validBefore: payment.validBefore, nonce: payment.nonce, signature: payment.signature },
      charge,
    ],
  })
}

/** Calldata's intrinsic gas counted here: 4 per zero byte, 16 per other. */
export function intrinsicDataGas(data: Hex): bigint {
  let gas = 0n
  for (let index = 2; index < data.length; index += 2) gas += data.slice(index, index + 2) === '00' ? 4n : 16n
  return gas
}
