import { formatUnits, getAddress, serializeErc6492Signature, zeroAddress, type Hex } from 'viem'
import { expectChainId } from '../chain/expectChainId.ts'
import { expectedFeePerGas, readFees } from '../chain/fees.ts'
import { readL1DataFee } from '../chain/l1DataFee.ts'
import { readWeiPerBaseUnit, type Fraction } from '../chain/tokenPrice.ts'
import { ToolError } from '../tool/tool.ts'
import type { RelayContext } from './context.ts'
import { paymentToken, requireSignedTransfers, walletFactoryListed, walletFactoryWords } from './paymentToken.ts'
import { payeeRefunds } from './payeeRefunds.ts'
import { chargeFor, worstCaseWei, type WorstCase } from '../charge/pricing.ts'
import { walletDeploymentGas, type WalletDeployment } from './walletDeployment.ts'
import { revertReason } from './revertReason.ts'
import { encodeRunnerCall, type RunnerCharge } from './runnerCall.ts'
import { estimateCharge, expectedCharge, EXPECTED_SETTLEMENT_GAS, expectedRelayGas, QUOTED_REFUND_GAS, refundUnderItsGas, runnerCharge } from './runnerCharge.ts'
import { calldataGas, MAX_TRANSACTION_GAS, prepareRunnerTransaction, type PreparedRelay, runnerGasLimit, signedCallsOnly, stipendFor } from './runnerTransaction.ts'
import type { Quote, QuoteRequest } from './schemas.ts'
import { readAuthorizations, viemAuthorizations } from './delegation7702.ts'
import { callSpends, readBatch } from './relayOfRequest.ts'
import { simulateAs } from './simulationGate.ts'

/**
 * Gas of the Runner's payment phase for a signed EIP-3009 transfer — FiatToken v2's
 * `transferWithAuthorization` with a cold nonce slot and a fresh payee balance, and the Runner's two
 * balance reads — which a quote cannot measure before the transfer is signed (the signature depends
 * on the quoted amount). test/runner-contract.test.ts measures the real one below it.
 */
export const AUTHORIZATION_PHASE_GAS = 110_000n

/**
 * What a signed transfer's payment phase usually uses, for a quote's expected charge (not a bound:
 * the worst case counts `AUTHORIZATION_PHASE_GAS`). Measured on the devnet with FiatToken v2.2 (test/refunds.test.ts holds the expected
 * charge within a tenth of the charged one).
 */
export const EXPECTED_AUTHORIZATION_PHASE_GAS = 60_000n

/** A placeholder signature with no zero byte (the dearest calldata a real one can be), with r and s in range. */
const PLACEHOLDER_SIGNATURE: Hex = `0x${'7f'.repeat(64)}1b`

/** A smart wallet's placeholder signature inside ERC-6492's wrapper: an owner's key wrapped with its index, as Coinbase Smart Wallet's (224 bytes, none zero). */
const PLACEHOLDER_WALLET_SIGNATURE: Hex = `0x${'7f'.repeat(224)}`

/**
 * Prices a call in a payment token: the worst case the runner would sign (gas limit × max fee,
 * plus the L1 data fee where the chain charges one), plus the configured margin, at the configured
 * pool's price, rounded up.
 * - `payment: "authorization"` (default): the call runs after a signed EIP-3009 transfer. The call
 *   is measured as the Runner would make it (from the Runner contract), and the transfer's gas is
 *   `AUTHORIZATION_PHASE_GAS`, since it is not signed yet. A token that takes no signed transfers
 *   (WETH9: no EIP-3009) is refused, naming the forms that can pay in it. A payer not deployed yet
 *   (`payerDeployment`, its ERC-6492 factory and call) adds its deployment, measured from the Runner;
 *   a factory off the Runner's list is refused.
 * - `payment: "batch"`: `call` is a delegate's signed batch of the account's calls and
 *   `paymentBatch` its signed payment-only batch (the `call` and `payment.batch` its group's execute tool returned):
 *   the exact runner transaction is simulated with its own, non-zero payment.
 *
 * @example
 * await quoteCall(context, { call: { to: usdc, data }, token: 'USDC' }) // { amount: '0.151234', amountBaseUnits: '151234', payee, validUntil, … }
 */
export async function quoteCall(context: RelayContext, request: QuoteRequest, client?: string): Promise<Quote> {
  const { network } = context
  const { config } = network
  const token = paymentToken(network, request.token)
  const payee = getAddress(config.payee)
  const marginBps = config.margins.quoteBps
  // A call submit would refuse under this payment (a delegate's batch it must not run so) is refused here first.
  callSpends(context, request.call, request.payment === 'batch' ? (request.paymentBatch as Hex | undefined) : undefined)
  if (request.payment === 'batch' && request.payerDeployment) throw new ToolError('payerDeployment prices a signed transfer from a wallet not deployed yet: leave it out with payment "batch"')
  // The simulations are the caller's: bounded per client, a refused one counted at its gas (submitCall's too).
  const { worstCase, weiPerBaseUnit: price, expected } = await simulateAs(context.simulations, client, BigInt(config.relay.maxCallGas), async (): Promise<Measured> => {
    if (request.payment !== 'batch') return measureAuthorizationRelay(context, request)
    const relay = readBatch(context, request.call, request.paymentBatch as Hex | undefined, token)
    const prepared = await prepareRunnerTransaction(context, relay, request.authorizationList, { token, amount: relay.amount, nonce: 0, refusal: 'cannot quote' })
    return {
      worstCase: { gasLimit: prepared.gas, maxFeePerGas: prepared.fees.maxFeePerGas, l1FeeWei: prepared.l1FeeWei },
      weiPerBaseUnit: prepared.weiPerBaseUnit,
      expected: { charge: prepared.charge, gas: expectedBatchGas(prepared, config.runner.gasLimitBps), feePerGas: expectedFeePerGas(prepared.fees) },
    }
  })
  const amount = chargeFor(worstCase, marginBps, price)
  return {
    token: token.address,
    symbol: token.symbol,
    amount: formatUnits(amount, token.decimals),
    amountBaseUnits: amount.toString(),
    payee,
    validUntil: Math.floor(Date.now() / 1000) + config.relay.quoteTtlSec,
    gas: worstCase.gasLimit.toString(),
    feePerGasWei: worstCase.maxFeePerGas.toString(),
    costWei: worstCaseWei(worstCase).toString(),
    // A refund worth less than its own gas is not made: the payee keeps the whole payment.
    expectedChargeBaseUnits: (refundUnderItsGas(expected.charge, expected.gas, expected.feePerGas, amount, price) ? amount : expectedCharge(expected.charge, expected.gas, expected.feePerGas, amount)).toString(),
  }
}

/** The gas a simulated relay is expected to use (`expectedRelayGas`): the stipend's unspent part as the probe measured it. */
function expectedBatchGas(prepared: PreparedRelay, gasLimitBps: number): bigint {
  return expectedRelayGas({ gas: prepared.gas, gasLimitBps, callGas: prepared.callGas, callGasUsed: prepared.callGasUsed ?? prepared.callGas, refundGas: prepared.charge.refundGas })
}

/**
 * What a quote measured: the worst case the runner would sign, the price, and what the relay is
 * expected to charge — the charge it would sign, the gas it should use (the limit without its
 * headroom) and the fee per gas at the latest base fee.
 */
interface Measured {
  readonly worstCase: WorstCase
  readonly weiPerBaseUnit: Fraction
  readonly expected: { readonly charge: RunnerCharge; readonly gas: bigint; readonly feePerGas: bigint }
}

/**
 * The gas of an undeployed wallet's deployment, as the Runner makes it in the payment phase; a
 * factory off the Runner's list, or a call that fails, is refused.
 */
async function measureDeployment(context: RelayContext, deployment: WalletDeployment): Promise<bigint> {
  const factory = getAddress(deployment.factory)
  if (!(await walletFactoryListed(context.network, factory))) throw new ToolError(`cannot quote: ${walletFactoryWords(factory)}`)
  return walletDeploymentGas(context.network, { factory, factoryData: deployment.factoryData }, 'cannot quote')
}

/**
 * The worst case of a relay paid by a signed transfer that is not signed yet: the call measured as
 * the Runner would make it, given its stipend, and the gas limit that stipend needs beside the
 * transfer (`AUTHORIZATION_PHASE_GAS`), the Runner's settlement and the calldata.
 */
async function measureAuthorizationRelay(context: RelayContext, request: QuoteRequest) {
  const { network } = context
  const { client, config } = network
  const token = paymentToken(network, request.token)
  const runner = getAddress(config.runner.contract)
  const target = getAddress(request.call.to)
  const authorizations = viemAuthorizations(request.authorizationList)
  const blockRead = client.getBlock({ blockTag: 'latest' })
  // A price for a signed transfer the token cannot take would only be refused later, in its words:
  // asked in the same JSON-RPC batch as the rest (once per token that takes them), and said first.
  const tokenRefusal = context.signedTransferTokens?.has(token.address)
    ? undefined
    : requireSignedTransfers(network, token, context.delegates).then(
        () => void context.signedTransferTokens?.add(token.address),
        (error: unknown) => error,
      )
  const measured = Promise.all([
    target === zeroAddress
      ? 0n
      : client
          // The call as the Runner makes it: from the Runner contract, at the latest block.
          .estimateGas({ account: runner, to: target, data: request.call.data as Hex, blockTag: 'latest', ...(authorizations ? { authorizationList: authorizations } : {}) })
          .then((gas) => {
            const used = gas - 21_000n - calldataGas(request.call.data as Hex)
            return used > 0n ? used : 0n
          })
          .catch((error: unknown) => {
            const reason = revertReason(error, token.decimals, token.symbol, context.delegates)
            if (!reason) throw error
            throw new ToolError(`cannot quote: the call fails in simulation from Bruno's Runner contract (${runner}): ${reason}. ${signedCallsOnly(runner, context.delegates)}`)
          }),
    readFees(client, blockRead),
    readWeiPerBaseUnit(network, token.address),
    blockRead,
    payeeRefunds(context),
    readAuthorizations(network, request.authorizationList, target).catch((error: unknown) => {
      throw error instanceof ToolError ? new ToolError(`cannot quote: ${error.message}`) : error
    }),
    request.payerDeployment ? measureDeployment(context, request.payerDeployment as WalletDeployment) : 0n,
    expectChainId(network),
  ])
  // Awaited after the token's answer, which is said first: a refusal meanwhile must not go unhandled.
  measured.catch(() => undefined)
  const refused = await tokenRefusal
  if (refused !== undefined) throw refused
  const [callGasUsed, fees, weiPerBaseUnit, block, refunds, authorizationGas, deploymentGas] = await measured
  const callGas = target === zeroAddress ? 0n : stipendFor(callGasUsed)
  const payee = getAddress(config.payee)
  const deployment = request.payerDeployment
  const placeholder = {
    token: token.address,
    authorization: { from: payee, to: payee, value: '1', validAfter: '0', validBefore: '99999999999', nonce: `0x${'ff'.repeat(32)}` },
    // A wallet not deployed yet signs with ERC-6492's wrapper: its factory's calldata rides in the Runner's calldata.
    signature: deployment
      ? serializeErc6492Signature({ address: getAddress(deployment.factory), data: deployment.factoryData as Hex, signature: PLACEHOLDER_WALLET_SIGNATURE })
      : PLACEHOLDER_SIGNATURE,
  }
  const relay = { form: 'authorization' as const, call: { to: target, data: request.call.data as Hex }, payment: placeholder, payee }
  const refundGas = refunds ? QUOTED_REFUND_GAS : 0n
  const markupBps = config.margins.markupBps
  const data = encodeRunnerCall(relay, callGas, estimateCharge(refundGas, markupBps))
  const transactionCap = block.gasLimit < MAX_TRANSACTION_GAS ? block.gasLimit : MAX_TRANSACTION_GAS
  const gasLimit = runnerGasLimit({
    runnerData: data,
    copiedData: request.call.data as Hex,
    beforeCall: AUTHORIZATION_PHASE_GAS + deploymentGas,
    callGas,
    authorizationGas: 0n,
    gasLimitBps: config.runner.gasLimitBps,
    refundGas,
  })
  if (gasLimit > transactionCap) throw new ToolError(`cannot quote: the call needs ${gasLimit} gas, over the ${transactionCap} one transaction may carry on ${config.name}`)
  const l1FeeWei = await readL1DataFee(network, { to: runner, data, gas: gasLimit, nonce: 0, ...fees, ...(authorizations ? { authorizationList: authorizations } : {}) })
  const charge = runnerCharge({ relay, callGas, authorizationGas, l1FeeWei, weiPerBaseUnit, markupBps, refundGas })
  // Expected, not bounded: the call's measured gas rather than its stipend, the transfer's and the settlement's
  // usual gas rather than their reserves.
  const expectedGas = 21_000n + calldataGas(data) + EXPECTED_AUTHORIZATION_PHASE_GAS + deploymentGas + callGasUsed + EXPECTED_SETTLEMENT_GAS + refundGas
  const expected = { charge, gas: expectedGas, feePerGas: expectedFeePerGas(fees) }
  return { worstCase: { gasLimit, maxFeePerGas: fees.maxFeePerGas, l1FeeWei }, weiPerBaseUnit, expected }
}
