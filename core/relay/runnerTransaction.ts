import { BaseError, concat, getAddress, InsufficientFundsError, zeroAddress, type Address, type Hex, type SignedAuthorizationList } from 'viem'
import { expectChainId } from '../chain/expectChainId.ts'
import { expectedFeePerGas, readFees, type Fees } from '../chain/fees.ts'
import { readL1DataFee } from '../chain/l1DataFee.ts'
import { readWeiPerBaseUnit, type Fraction } from '../chain/tokenPrice.ts'
import { BrunoFault } from '../chain/faults.ts'
import { ToolError } from '../tool/tool.ts'
import type { RelayContext } from './context.ts'
import { delegateBatchTools, type Delegate } from './delegate.ts'
import { readAuthorizations, viemAuthorizations } from './delegation7702.ts'
import type { PaymentToken } from '../charge/gasPricer.ts'
import { PaymentRefusal, type PaymentProblem } from './paymentRefusal.ts'
import { payerShortfall, requireSignedTransfers } from './paymentToken.ts'
import { paymentCovers, type Coverage } from '../charge/pricing.ts'
import { describeRevertData, runnerRevertReason } from './revertReason.ts'
import { decodeRelayResult, encodeRunnerCall, RUNNER_SETTLE_GAS, type CallOutcome, type RunnerCharge, type RunnerRelay } from './runnerCall.ts'
import { estimateCharge, REFUND_PROBE_CHARGE, REFUND_PROBE_GAS, refundCap, refundUnderItsGas, runnerCharge } from './runnerCharge.ts'
import type { SignedAuthorization } from './schemas.ts'
import { payerDeploymentGas } from './walletDeployment.ts'


/** The simulating runner key's ETH cannot pay for the transaction's gas: a fault of Bruno's (its lane takes no work until funded). */
export class RunnerShortOfEth extends BrunoFault {}

export type { Fees }

/** EIP-7825 (Osaka): no transaction may carry a gas limit above 2²⁴, whatever the block's limit. */
export const MAX_TRANSACTION_GAS = 16_777_216n

/**
 * Room in a transaction beside the call's stipend: the intrinsic gas, the payment phase, the
 * Runner's own work — for a batch, this beside its payment phase, which its `paymentGas` caps (a
 * delegate's can cost more than a signed transfer's: MetaMask's redemption ≈ 91,000, capped at 150,000).
 */
const PAYMENT_PHASE_ROOM = 500_000n
const BESIDE_BATCH_PAYMENT_ROOM = 350_000n
const roomBesideCall = (relay: RunnerRelay) => (relay.form === 'batch' ? BESIDE_BATCH_PAYMENT_ROOM + relay.paymentGas : PAYMENT_PHASE_ROOM)

/** The runner transaction for a relay, exactly as it will be signed, and what it may cost. */
export interface PreparedRelay {
  readonly to: Address
  readonly data: Hex
  /** The call's stipend, inside `data`. */
  readonly callGas: bigint
  /** The gas limit to sign: the least that gives the call its whole stipend, with the configured headroom. */
  readonly gas: bigint
  readonly fees: Fees
  readonly authorizationList?: SignedAuthorizationList
  readonly l1FeeWei: bigint
  readonly weiPerBaseUnit: Fraction
  /** Whether the payment covers `gas × maxFeePerGas + l1FeeWei` at the pool price. */
  readonly coverage: Coverage
  /** What the Runner charges of the payment and refunds of the rest, inside `data` (`refundGas` 0: the payee keeps it all). */
  readonly charge: RunnerCharge
  /** The gas the call used in the probe (absent when nothing was probed: a send with its stipend known). */
  readonly callGasUsed?: bigint
}

/**
 * The stipend a call that used `gasUsed` is given: what it used, plus room for the 63/64 rule in
 * its own nested calls and for cold state it may meet at inclusion.
 *
 * @example
 * stipendFor(160_000n) // 180_000n
 */
export function stipendFor(gasUsed: bigint): bigint {
  return gasUsed + gasUsed / 16n + 10_000n
}

/**
 * The gas limit the runner would sign for a relay measured before it can be simulated whole (a
 * quote before the transfer is signed, a batch before it is signed), counted as the Runner spends
 * it: the intrinsic gas of `runnerData` (and `authorizationGas`), the work before the call, the
 * copy of `copiedData` into memory, the stipend with the 1/64 a call keeps back, the settlement and the refund's reserve —
 * never below the EIP-7623 calldata floor — with the configured headroom (`gasLimitBps`).
 *
 * @example
 * runnerGasLimit({ runnerData, copiedData: call.data, beforeCall: 110_000n, callGas: 60_000n, authorizationGas: 0n, gasLimitBps: 10_500 })
 */
export function runnerGasLimit(parts: {
  runnerData: Hex
  copiedData: Hex
  beforeCall: bigint
  callGas: bigint
  authorizationGas: bigint
  gasLimitBps: number
  /** The refund's cap, which the Runner reserves with its 1/64 before the call (0: no refund). */
  refundGas?: bigint
}): bigint {
  const calldata = calldataGas(parts.runnerData)
  const words = BigInt(Math.ceil((parts.copiedData.length - 2) / 64))
  const refund = parts.refundGas ?? 0n
  const least =
    21_000n + calldata + parts.authorizationGas + parts.beforeCall + 3n * words + (words * words) / 512n + parts.callGas + parts.callGas / 63n + RUNNER_SETTLE_GAS + refund + refund / 63n
  const floor = 21_000n + (10n * calldata) / 4n
  return ((least > floor ? least : floor) * BigInt(parts.gasLimitBps)) / 10_000n
}

/**
 * Prepares the runner transaction for a relay and simulates exactly what will be signed — the same
 * from, to, data, gas limit, fee fields and authorization list — at the latest block:
 * 1. a probe with the largest stipend allowed (`relay.maxCallGas`) measures the call and the payee's
 *    refund of the whole payment, in the same JSON-RPC batch as the fees, the block and the price; a
 *    payment phase that fails, or a call that fails even with that stipend, is a `ToolError`
 *    (`${refusal}: <reason>`);
 * 2. the stipend is the measured gas with room (`stipendFor`), and the refund's cap the measured
 *    refund with its margin (none when the payee made no refund), unless `callGas` and `refundGas`
 *    are given;
 * 3. the gas limit is the node's estimate of the exact transaction — the least limit that gives the
 *    call its whole stipend, since the Runner reverts `GasShort` below it — with the configured headroom;
 * 4. the L1 data fee is read where the chain charges one, and the charge made (`runnerCharge`: the
 *    price of this send, `margins.markupBps`, the refund's cap); a refund worth less than its own
 *    gas at the expected fee, from a payment that covers the worst case, is not made
 *    (`refundUnderItsGas`): estimated again with `KEEP_PAYMENT`;
 * 5. the exact transaction is run at that limit and those fees: a call that fails there gets a larger
 *    stipend (twice at most), then is refused;
 * 6. the worst case is checked against the payment at the pool price.
 *
 * @example
 * const prepared = await prepareRunnerTransaction(context, relay, undefined, { token: usdc, amount: 150_000n, nonce: 7 })
 * prepared.coverage.covered // true: 150_000 base units pay for prepared.gas × maxFeePerGas
 */
export async function prepareRunnerTransaction(context: RelayContext, relay: RunnerRelay, authorizationList: readonly SignedAuthorization[] | undefined, options: PrepareOptions): Promise<PreparedRelay> {
  try {
    return await prepareAs(context, relay, authorizationList, options)
  } catch (error) {
    // The simulating lane cannot pay: a quote or submit tries the chain's next lane, which may.
    const [next, ...rest] = context.spareOperators ?? []
    if (!(error instanceof RunnerShortOfEth) || next === undefined) throw error
    return prepareRunnerTransaction({ ...context, operator: next, spareOperators: rest }, relay, authorizationList, options)
  }
}

interface PrepareOptions {
  token: PaymentToken
  amount: bigint
  nonce: number
  fees?: Fees
  /** The stipend and the refund's cap measured before (a send, a replacement): the probe is skipped. */
  callGas?: bigint
  refundGas?: bigint
  refusal?: string
  explainCallFailure?: () => Promise<string | undefined>
}

async function prepareAs(context: RelayContext, relay: RunnerRelay, authorizationList: readonly SignedAuthorization[] | undefined, options: PrepareOptions): Promise<PreparedRelay> {
  const { network, operator } = context
  const { client, config } = network
  const to = getAddress(config.runner.contract)
  const authorizations = viemAuthorizations(authorizationList)
  const refusal = options.refusal ?? 'refused'
  const { token } = options
  // The data the transaction carries beside the Runner's own arguments: a batch's two signed batches.
  const callData = relay.form === 'batch' ? concat([relay.paymentData, relay.data]) : relay.call.data
  const hasCall = relay.form === 'batch' || getAddress(relay.call.to) !== zeroAddress
  const base = { account: operator, to, blockTag: 'latest' as const, ...(authorizations ? { authorizationList: authorizations } : {}) }
  const run = async (data: Hex, gas: bigint, withFees: Fees | undefined): Promise<CallOutcome> => {
    try {
      const result = await client.call({ ...base, data, gas, ...(withFees ?? {}) })
      return decodeRelayResult(relay.form, result.data ?? '0x')
    } catch (error) {
      throw await refuseOrFault(error, withFees)
    }
  }
  const markupBps = config.margins.markupBps
  // The transaction with its charge at its dearest: estimated, and its L1 fee read (the real charge's bytes cost no more).
  const dearestData = (callGas: bigint, refundGas: bigint) => encodeRunnerCall(relay, callGas, estimateCharge(refundGas, markupBps))
  const estimateFor = (data: Hex, fees: Fees) =>
    client.estimateGas({ ...base, data, ...fees }).catch(async (error: unknown) => {
      throw await refuseOrFault(error, fees)
    })
  // The simulations run from the runner's operator: one that fails for want of its ETH is Bruno's
  // fault, never the caller's (a node says "insufficient funds", or "gas required exceeds
  // allowance" where the operator's balance, not the transaction cap, bounds the allowance).
  const refuseOrFault = async (error: unknown, withFees: Fees | undefined): Promise<unknown> => {
    const reverted = runnerRevertReason(error, relay.form, token.decimals, token.symbol, context.delegates)
    if (reverted) {
      const diagnosis = reverted.byPayment ? await paymentDiagnosis(context, relay, token) : undefined
      if (diagnosis) return new PaymentRefusal(`${refusal}: ${diagnosis.words}`, diagnosis.problem)
      return reverted.problem ? new PaymentRefusal(`${refusal}: ${reverted.words}`, reverted.problem) : new ToolError(`${refusal}: ${reverted.words}`)
    }
    if (!(error instanceof BaseError)) return error
    const short = error.walk((cause) => cause instanceof InsufficientFundsError) !== null
    const capped = withFees !== undefined && /gas required exceeds allowance/i.test(error.message)
    if (capped && !short) {
      const balance = await client.getBalance({ address: operator }).catch(() => undefined)
      if (balance === undefined || withFees.maxFeePerGas === 0n || balance / withFees.maxFeePerGas >= MAX_TRANSACTION_GAS) return error
    } else if (!short) return error
    return new RunnerShortOfEth("the runner's ETH balance is too low to pay for gas", { cause: error })
  }
  // One JSON-RPC batch: the block, fees and price, and either the probe (its stipend the configured
  // cap, checked against the block's gas limit once that is known; no gas price, so that the whole
  // payment is refunded and the refund measured) or, when the stipend, the refund's cap and the fees
  // are known already (a send), the estimate of the exact transaction.
  // An undeployed wallet's ERC-6492 payment deploys it in the payment phase: that gas is room beside the call too.
  const room = roomBesideCall(relay) + (await payerDeploymentGas(network, relay, refusal))
  const probeCap = BigInt(config.relay.maxCallGas)
  const probing = options.callGas === undefined
  const probeStipend = hasCall ? probeCap : 0n
  const probeGas = probeStipend + room + calldataGas(callData) + REFUND_PROBE_GAS + REFUND_PROBE_GAS / 63n
  const blockRead = client.getBlock({ blockTag: 'latest' })
  const counted = readAuthorizations(network, authorizationList, relay.form === 'batch' ? relay.account : getAddress(relay.call.to)).catch((error: unknown) => {
    throw error instanceof ToolError ? new ToolError(`${refusal}: ${error.message}`) : error
  })
  const [fees, block, weiPerBaseUnit, probe, knownEstimate, authorizationGas] = await Promise.all([
    options.fees ?? readFees(client, blockRead),
    blockRead,
    readWeiPerBaseUnit(network, token.address),
    probing ? run(encodeRunnerCall(relay, probeStipend, REFUND_PROBE_CHARGE), probeGas, undefined) : undefined,
    options.callGas !== undefined && options.fees ? estimateFor(dearestData(options.callGas, options.refundGas ?? 0n), options.fees) : undefined,
    counted,
    expectChainId(network),
  ])
  const transactionCap = block.gasLimit < MAX_TRANSACTION_GAS ? block.gasLimit : MAX_TRANSACTION_GAS
  const callCap = min(probeCap, transactionCap - room - calldataGas(callData))
  if (callCap <= 0n) throw new ToolError(`${refusal}: the call's data is too large for one transaction on ${config.name}`)
  const callFails = async (outcome: CallOutcome, what: string) => {
    const why = outcome.reason !== '0x' ? describeRevertData(outcome.reason, token.decimals, token.symbol, context.delegates) : await options.explainCallFailure?.()
    // A signed transfer pays first, then the Runner makes the call itself: whatever the call takes
    // from msg.sender (a token's balance or allowance) it takes from the Runner, not the payer.
    const sender = relay.form === 'authorization' ? `. ${signedCallsOnly(to, context.delegates)}` : ''
    return new ToolError(
      `${refusal}: the call fails ${what}${why ? `: ${why}` : ''}${sender}. Nothing was sent. A call that fails on chain still pays, so Bruno only sends calls that succeed in simulation`,
    )
  }

  let callGas = options.callGas ?? 0n
  let refundGas = options.refundGas ?? 0n
  if (probe) {
    if (!probe.callSucceeded && hasCall) throw await callFails(probe, `in simulation even with ${probeCap} gas`)
    const floor = relay.form === 'batch' ? (relay.callGasFloor ?? 0n) : 0n
    const measured = stipendFor(probe.callGasUsed)
    if (hasCall) callGas = min(measured > floor ? measured : floor, callCap)
    refundGas = refundCap(probe.refundGasUsed)
  }
  let attempt = 0
  for (let first = true; ; first = false) {
    const dearest = dearestData(callGas, refundGas)
    const estimate = (first && knownEstimate !== undefined ? knownEstimate : await estimateFor(dearest, fees)) + (context.laneGas ?? 0n)
    const gas = min((estimate * BigInt(config.runner.gasLimitBps)) / 10_000n, transactionCap)
    if (estimate > transactionCap) throw new ToolError(`${refusal}: the transaction needs ${estimate} gas, over the ${transactionCap} one transaction may carry on ${config.name}`)
    const withAuthorizations = authorizations ? { authorizationList: authorizations } : {}
    const l1FeeWei = await readL1DataFee(network, { to, data: dearest, gas, nonce: options.nonce, ...fees, ...withAuthorizations })
    // A payee that makes no refund (`refundGas` 0) keeps the payment: the charge is then `KEEP_PAYMENT`.
    const charge = runnerCharge({ relay, callGas, authorizationGas, l1FeeWei, weiPerBaseUnit, markupBps, refundGas })
    const coverage = paymentCovers(options.amount, { gasLimit: gas, maxFeePerGas: fees.maxFeePerGas, l1FeeWei }, weiPerBaseUnit)
    // A refund worth less than its own gas is kept: the relay is estimated again without it. (A payment
    // that does not cover the worst case is not sent at all: its refund is not weighed.)
    if (coverage.covered && refundUnderItsGas(charge, estimate, expectedFeePerGas(fees), options.amount, weiPerBaseUnit)) {
      refundGas = 0n
      continue
    }
    const data = encodeRunnerCall(relay, callGas, charge)
    const outcome = await run(data, gas, fees)
    if (outcome.callSucceeded || !hasCall) {
      return { to, data, callGas, gas, fees, ...withAuthorizations, l1FeeWei, weiPerBaseUnit, coverage, charge, ...(probe && hasCall ? { callGasUsed: probe.callGasUsed } : {}) }
    }
    if (attempt === 2 || callGas >= callCap) throw await callFails(outcome, `in simulation with a ${callGas}-gas stipend at the fees it would be sent with`)
    attempt++
    callGas = min(callCap, (callGas * 3n) / 2n)
  }
}

/**
 * Why a call paid by a signed transfer fails that would succeed from the account, and where it
 * belongs instead: the Runner makes the call, so it is the call's msg.sender. Said by `quote` and
 * `submit` alike.
 *
 * @example
 * throw new ToolError(`cannot quote: the call fails …. ${signedCallsOnly(runner, context.delegates)}`)
 */
export function signedCallsOnly(runner: Address, delegates: readonly Delegate[]): string {
  return (
    `The call runs with Bruno's Runner contract (${runner}) as msg.sender, so only calls that act by signature belong there: ` +
    "a transfer of the account's own tokens is transfer_authorization's call (the account signs it, no ETH); " +
    `anything else the account does itself (an approve, a swap of its tokens) goes in ${delegateBatchTools(delegates)}`
  )
}

/**
 * What is wrong with a payment that made the runner transaction revert, when it can be told better
 * than the token's words: a token that takes no signed transfers, or a payer holding less than it
 * transfers. Read only after the refusal, so a good payment costs no extra read.
 */
async function paymentDiagnosis(context: RelayContext, relay: RunnerRelay, token: PaymentToken): Promise<{ words: string; problem: PaymentProblem } | undefined> {
  const { network } = context
  const funds = (words: string | undefined) => (words === undefined ? undefined : { words, problem: 'funds' as const })
  if (relay.form === 'batch') return funds(await payerShortfall(network, token, relay.account, relay.amount, 'the transfer payment.batch makes'))
  const refused = await requireSignedTransfers(network, token, context.delegates).then(
    () => undefined,
    (error: unknown) => {
      if (error instanceof ToolError) return { words: error.message, problem: 'token' as const }
      throw error
    },
  )
  const { authorization } = relay.payment
  return refused ?? funds(await payerShortfall(network, token, getAddress(authorization.from), BigInt(authorization.value), 'payment.authorization.value'))
}

/** Calldata's intrinsic gas: 4 per zero byte, 16 per other byte. */
export function calldataGas(data: Hex): bigint {
  let gas = 0n
  for (let index = 2; index < data.length; index += 2) gas += data.charCodeAt(index) === 48 && data.charCodeAt(index + 1) === 48 ? 4n : 16n
  return gas
}

function min(a: bigint, b: bigint): bigint {
  return a < b ? a : b
}
