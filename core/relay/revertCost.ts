import type { NetworkConfig } from '../../config/schema.ts'
import { ToolError } from '../tool/tool.ts'
import { AUTHORIZATION_PHASE_GAS } from './quote.ts'
import type { RunnerRelay } from './runnerCall.ts'
import { calldataGas } from './runnerTransaction.ts'

/** Intrinsic gas of one EIP-7702 authorization (PER_EMPTY_ACCOUNT_COST, charged in full when the transaction reverts). */
const AUTHORIZATION_INTRINSIC_GAS = 25_000n
/** The Runner's own work in a batch relay's payment phase: the operator and delegation checks, a cold balance read, the call. */
const RUNNER_BATCH_PAYMENT_GAS = 30_000n

/**
 * What a runner transaction costs if it reverts in its payment phase — its payer voided the payment
 * (moved the tokens, spent the nonce, re-delegated) in the block before — the one loss the relay
 * accepts: the intrinsic gas of its calldata and authorizations plus the most the payment phase may
 * spend (a signed transfer's `AUTHORIZATION_PHASE_GAS`, a batch's `paymentGas` and the Runner's
 * work), and never less than EIP-7623's calldata floor (10 gas a token), which a reverting
 * transaction pays too.
 *
 * @example
 * revertCostGas(relay, encodeRunnerCall(relay, callGas), 0) // 96_412n for a small batch, 5_200_000n for 129 KB of calldata
 */
export function revertCostGas(relay: RunnerRelay, data: `0x${string}`, authorizations: number): bigint {
  const calldata = calldataGas(data)
  const paymentPhase = relay.form === 'batch' ? relay.paymentGas + RUNNER_BATCH_PAYMENT_GAS : AUTHORIZATION_PHASE_GAS
  const standard = 21_000n + calldata + AUTHORIZATION_INTRINSIC_GAS * BigInt(authorizations) + paymentPhase
  const floor = 21_000n + (10n * calldata) / 4n + AUTHORIZATION_INTRINSIC_GAS * BigInt(authorizations)
  return standard > floor ? standard : floor
}

/**
 * The most a relay's revert may cost: `relay.maxRevertGas`, and for a delegate's batch whose payment
 * phase costs more than a signed transfer's (`AUTHORIZATION_PHASE_GAS`), that excess on top. A
 * delegate whose payment alone is dear (a redemption through a manager, capped at 150,000) is served at the default
 * bound without raising it for every payer: each payer has the same room for calldata, whatever
 * its payment's layout.
 *
 * @example
 * revertGasBound(300_000, signedTransferRelay) // 300_000n
 * revertGasBound(300_000, { form: 'batch', paymentGas: 268_144n, … }) // 488_144n
 */
export function revertGasBound(maxRevertGas: number, relay: RunnerRelay): bigint {
  if (relay.form !== 'batch') return BigInt(maxRevertGas)
  const excess = relay.paymentGas + RUNNER_BATCH_PAYMENT_GAS - AUTHORIZATION_PHASE_GAS
  return BigInt(maxRevertGas) + (excess > 0n ? excess : 0n)
}

/**
 * Refuses a relay whose revert, should its payer void the payment before inclusion, would cost more
 * than its bound (`revertCostGas` over `revertGasBound`), unless the runner sends through a
 * revert-protected endpoint. Made by submit on the exact transaction, and by a delegate's batch tool
 * on the batch it prices (its calldata at its dearest), before anything is signed.
 *
 * @example
 * requireRevertCostWithin(config, relay, prepared.data, 0) // ToolError: refused: if its payment were voided …
 */
export function requireRevertCostWithin(config: Pick<NetworkConfig, 'relay' | 'runner'>, relay: RunnerRelay, data: `0x${string}`, authorizations: number): void {
  const bound = revertGasBound(config.relay.maxRevertGas, relay)
  const revertCost = revertCostGas(relay, data, authorizations)
  if (revertCost <= bound || config.runner.broadcastUrl?.revertProtected) return
  throw new ToolError(
    `refused: if its payment were voided before inclusion, the runner's transaction would revert and still cost ${revertCost} gas ` +
      `(its ${(data.length - 2) / 2} bytes of calldata count at EIP-7623's floor), over the ${bound} this relay risks on ${relay.form === 'batch' ? 'this payment' : 'a payment'}: ` +
      'make the call\'s data smaller, or split it into several submissions',
  )
}
