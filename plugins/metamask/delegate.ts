import { encodeFunctionData, getAddress, isAddressEqual, type Hex } from 'viem'
import { readPaymentLeg, ToolError, type BatchTerms, type Delegate, type Network, type PaymentServices, type RelayCall } from '../../core/plugin.ts'
import { delegatorAbi } from './abi.ts'
import { metaMaskContracts } from './contracts.ts'
import { BATCH_MODE, delegationHash, encodeExecutions, pinnedBatches, readPaymentFirstDelegation, readRedemption, type Delegation, type Execution } from './delegation.ts'
import { metaMaskWords } from './errors.ts'
import { METAMASK_PAYMENT_GAS } from './gas.ts'

const rebuild = 'build it with metamask_batch and pass what metamask_execute returned'

/**
 * What makes a delegation's redemptions unique: the account and the delegation's hash.
 *
 * @example
 * delegationIdentity(network, delegation) // 'metamask:base:0x7099…79C8:0x5f1c…'
 */
export function delegationIdentity(network: Network, delegation: Delegation): string {
  return `metamask:${network.name}:${getAddress(delegation.delegator)}:${delegationHash(delegation)}`
}

/**
 * The calldata of the account's own `execute` of a batch (ERC-7579 batch mode): its calls as the
 * account alone would run them, to measure them or to say why they fail.
 *
 * @example
 * ownExecute([leg, ...calls]) // '0xe9ae5c53…'
 */
export function ownExecute(executions: readonly Execution[]): Hex {
  return encodeFunctionData({ abi: delegatorAbi, functionName: 'execute', args: [BATCH_MODE, encodeExecutions(executions)] })
}

/**
 * MetaMask's EIP-7702 delegator as the relay knows it: an account delegated to
 * `EIP7702StatelessDeleGator` v1.3.0, whose payment-first delegation to Bruno's Runner is redeemed
 * through the DelegationManager twice — the payment (the submit's `payment.batch`), then the calls
 * (its `call`). Both redemptions must carry the same signed delegation, each the batch whose hash
 * it pins.
 *
 * @example
 * metaMaskDelegate(services.payment).read(network, { to: delegationManager, data: callsRedemption }, paymentRedemption) // { account, target: delegationManager, … }
 */
export function metaMaskDelegate(payments: Pick<PaymentServices, 'token'>): Delegate {
  return {
    ...metaMaskWords,
    address: () => metaMaskContracts.delegator,
    // The Runner is every payment-first delegation's only redeemer, so whatever it sends the
    // DelegationManager is a redemption it makes: only exactly one, paid by its own payment batch.
    // The enforcer runs the calls only after their payment in the same transaction; another
    // payment in front of them would make the relay's calls fail, paid for by someone else.
    callSpends(network, call, paymentBatch) {
      if (!isAddressEqual(getAddress(call.to), metaMaskContracts.delegationManager)) return undefined
      const redemption = readRedemption(call.data as Hex)
      if (typeof redemption !== 'object') {
        throw new ToolError(
          `refused: the call goes to MetaMask's DelegationManager but is not one payment-first redemption${redemption === undefined ? '' : ` (${redemption})`}: ` +
            `Bruno's Runner redeems a delegation only as metamask_execute builds it. ${rebuild}`,
        )
      }
      if (paymentBatch === undefined) {
        throw new ToolError(
          "refused: a MetaMask delegation's calls run only after its own payment batch, in the same relay: pay with the payment metamask_execute returned (its payment.batch), not with another payment",
        )
      }
      return delegationIdentity(network, redemption.delegation)
    },
    read(network, call: RelayCall, paymentData): BatchTerms | undefined {
      if (!isAddressEqual(getAddress(call.to), metaMaskContracts.delegationManager)) return undefined
      const calls = readRedemption(call.data as Hex)
      if (calls === undefined) return undefined
      if (typeof calls === 'string') throw new ToolError(`the call is not a payment-first MetaMask redemption: ${calls}: ${rebuild}`)
      if (paymentData === undefined) {
        throw new ToolError('the payment has no `batch`: a MetaMask call is paid by the redemption of its payment batch, metamask_execute\'s payment.batch: pass the payment it returned')
      }
      const payment = readRedemption(paymentData)
      if (typeof payment !== 'object') {
        throw new ToolError(`the payment's \`batch\` is not the redemption of a delegation's payment batch${typeof payment === 'string' ? ` (${payment})` : ''}: ${rebuild}`)
      }
      const hash = delegationHash(calls.delegation)
      if (delegationHash(payment.delegation) !== hash || payment.delegation.signature.toLowerCase() !== calls.delegation.signature.toLowerCase()) {
        throw new ToolError(`the payment and the call redeem different delegations: ${rebuild}`)
      }
      const terms = readPaymentFirstDelegation(calls.delegation, getAddress(network.config.runner.contract))
      if (typeof terms === 'string') throw new ToolError(`the delegation is not a payment-first delegation to Bruno: ${terms}: ${rebuild}`)
      const pinned = pinnedBatches(terms, payment.executions, calls.executions)
      if (typeof pinned === 'string') throw new ToolError(`the redemptions do not run what the delegation pins: ${pinned}: ${rebuild}`)
      const leg = readPaymentLeg(network, payments, { to: pinned.leg.target, value: pinned.leg.value, data: pinned.leg.callData })
      if (typeof leg === 'string') throw new ToolError(`the delegation's payment batch is not payment-only: ${leg}: ${rebuild}`)
      const account = getAddress(calls.delegation.delegator)
      return {
        account,
        delegate: metaMaskContracts.delegator,
        target: metaMaskContracts.delegationManager,
        paymentData,
        paymentGas: METAMASK_PAYMENT_GAS,
        token: leg.token,
        payee: getAddress(network.config.payee),
        amount: leg.amount,
        deadline: terms.deadline,
        identity: delegationIdentity(network, calls.delegation),
        // After the payment, as the Runner runs them: a call that spends what the payment took fails here too.
        ownCalls: { from: account, to: account, data: ownExecute([pinned.leg, ...pinned.calls]) },
      }
    },
  }
}
