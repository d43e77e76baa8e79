import { concat, getAddress, type SignedAuthorizationList } from 'viem'
import { readL1DataFee } from '../chain/l1DataFee.ts'
import type { Network } from '../chain/networks.ts'
import { ToolError } from '../tool/tool.ts'
import { AUTHORIZATION_GAS } from './delegation7702.ts'
import type { GasPricer } from '../charge/gasPricer.ts'
import { encodeRunnerCall, RUNNER_BATCH_GAS, type RunnerRelay } from './runnerCall.ts'
import { estimateCharge, expectedCharge, expectedRelayGas, QUOTED_REFUND_GAS, refundUnderItsGas, runnerCharge } from './runnerCharge.ts'
import { requireRevertCostWithin } from './revertCost.ts'
import { runnerGasLimit } from './runnerTransaction.ts'

/**
 * What a delegate's batch relay will cost, measured before it is signed, as submit will price it:
 * the gas limit of the exact `relayBatch` calldata (placeholder signatures in `relay`), the
 * Runner's work, the payment phase (`paymentPhaseGas`: what it was measured to need, else its cap
 * `relay.paymentGas`), `callGas` as the stipend, the settlement and a refund's reserve with the
 * charge's calldata at its dearest, as a payee that refunds would be sent (`runnerGasLimit`, one
 * EIP-7702 authorization each in `authorizations`), and the L1 data fee it
 * would pay at `feePerGas` where the chain charges one. A batch tool prices its payment leg from it.
 * A batch whose revert would cost more than the relay risks (`requireRevertCostWithin`) is refused
 * here, as submit would refuse it.
 *
 * @example
 * const { gas, l1FeeWei } = await batchRelayCost(network, relay, stipendFor(accountGas), pricer.feePerGas, viemAuthorizations(list))
 * pricer.amountFor(gas, l1FeeWei) // the payment leg's amount
 */
export async function batchRelayCost(
  network: Network,
  relay: RunnerRelay & { form: 'batch' },
  callGas: bigint,
  feePerGas: bigint,
  authorizations?: SignedAuthorizationList,
  paymentPhaseGas: bigint = relay.paymentGas,
): Promise<{ gas: bigint; l1FeeWei: bigint }> {
  // Priced as a payee that refunds would be sent: the charge's figures at their dearest, the refund's reserve.
  const runnerData = encodeRunnerCall(relay, callGas, estimateCharge(QUOTED_REFUND_GAS, network.config.margins.markupBps))
  // What submit would refuse of this batch is refused now, before the wallet signs it.
  requireRevertCostWithin(network.config, relay, runnerData, authorizations?.length ?? 0)
  const gas = runnerGasLimit({
    runnerData,
    copiedData: concat([relay.paymentData, relay.data]),
    beforeCall: RUNNER_BATCH_GAS + paymentPhaseGas,
    callGas,
    authorizationGas: AUTHORIZATION_GAS * BigInt(authorizations?.length ?? 0),
    gasLimitBps: network.config.runner.gasLimitBps,
    refundGas: QUOTED_REFUND_GAS,
  })
  const l1FeeWei = await readL1DataFee(network, {
    to: getAddress(network.config.runner.contract),
    data: runnerData,
    gas,
    nonce: 0,
    maxFeePerGas: feePerGas,
    maxPriorityFeePerGas: feePerGas,
    ...(authorizations && authorizations.length > 0 ? { authorizationList: authorizations } : {}),
  })
  return { gas, l1FeeWei }
}

/**
 * A batch's payment leg priced as submit will price it: `measure`d with a provisional leg of one
 * base unit, then with the leg that priced (which also checks the account can pay it); the larger
 * price is kept, never below one base unit.
 *
 * @example
 * const { amount, measured } = await priceLeg(pricer, (amount) => measureMyBatch(network, legFor(amount)))
 */
export async function priceLeg<M extends { readonly gas: bigint; readonly l1FeeWei: bigint }>(
  pricer: Pick<GasPricer, 'amountFor'>,
  measure: (amount: bigint) => Promise<M>,
): Promise<{ amount: bigint; measured: M }> {
  const priced = ({ gas, l1FeeWei }: M) => {
    const amount = pricer.amountFor(gas, l1FeeWei)
    return amount > 0n ? amount : 1n
  }
  let amount = priced(await measure(1n))
  const measured = await measure(amount)
  if (priced(measured) > amount) amount = priced(measured)
  return { amount, measured }
}

/**
 * A batch's deadline in unix seconds: the one given, else now + the network's submission ttl;
 * a deadline already past is refused.
 *
 * @example
 * batchDeadline(network, args.deadline) // 1796443200
 */
export function batchDeadline(network: Network, given: number | undefined): number {
  const now = Math.floor(Date.now() / 1000)
  const deadline = given ?? now + network.config.relay.submissionTtlSec
  if (deadline <= now) throw new ToolError(`the deadline ${deadline} has passed (now ${now})`)
  return deadline
}

/**
 * What a batch priced by `batchRelayCost` is expected to be charged of its payment `amount`, the
 * rest sent back (quote's expected charge, before the batches are signed): the Runner's formula run
 * at the gas the relay should use (`expectedRelayGas`: the limit `gas` without its headroom, the
 * stipend `callGas` less what the calls were measured to use), the fee per gas at the latest base
 * fee, the L1 data fee, the price and the markup. The whole `amount` where the payee keeps payments
 * (`refunds` false), or where the refund would be worth less than its own gas.
 *
 * @example
 * expectedBatchCharge(network, { relay, callGas, callGasUsed: accountGas, authorizations: 0, gas, l1FeeWei }, pricer, amount, true) // 668_226n
 */
export function expectedBatchCharge(
  network: Network,
  measured: { relay: RunnerRelay & { form: 'batch' }; callGas: bigint; callGasUsed: bigint; authorizations: number; gas: bigint; l1FeeWei: bigint },
  pricer: Pick<GasPricer, 'expectedFeePerGas' | 'weiPerBaseUnit'>,
  amount: bigint,
  refunds: boolean,
): bigint {
  if (!refunds) return amount
  const { config } = network
  const charge = runnerCharge({
    relay: measured.relay,
    callGas: measured.callGas,
    authorizationGas: AUTHORIZATION_GAS * BigInt(measured.authorizations),
    l1FeeWei: measured.l1FeeWei,
    weiPerBaseUnit: pricer.weiPerBaseUnit,
    markupBps: config.margins.markupBps,
    refundGas: QUOTED_REFUND_GAS,
  })
  const gas = expectedRelayGas({ gas: measured.gas, gasLimitBps: config.runner.gasLimitBps, callGas: measured.callGas, callGasUsed: measured.callGasUsed, refundGas: QUOTED_REFUND_GAS })
  if (refundUnderItsGas(charge, gas, pricer.expectedFeePerGas, amount, pricer.weiPerBaseUnit)) return amount
  return expectedCharge(charge, gas, pricer.expectedFeePerGas, amount)
}
