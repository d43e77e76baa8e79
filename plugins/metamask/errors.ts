import type { Abi, Hex } from 'viem'
import type { DelegateWords, ErrorVocabulary } from '../../core/plugin.ts'
import { paymentFirstEnforcerArtifact } from '../../contracts/artifacts.ts'
import { delegationManagerAbi, delegatorAbi } from './abi.ts'

/**
 * The DelegationManager's, the delegator's and Bruno's PaymentFirstEnforcer's errors in words: what
 * a redemption did wrong.
 *
 * @example
 * describeRevertData(data, 6, 'USDC', [metaMaskWords]) // 'the account disabled this delegation (CannotUseADisabledDelegation)'
 */
export const metaMaskErrors: ErrorVocabulary = {
  abi: [...delegationManagerAbi, ...delegatorAbi, ...paymentFirstEnforcerArtifact.abi].filter((item) => item.type === 'error') as Abi,
  describe(name: string, args: readonly unknown[], _nested: (data: Hex) => string) {
    switch (name) {
      case 'InvalidERC1271Signature':
      case 'InvalidEOASignature':
        return `the delegation's signature does not recover to the account (${name})`
      case 'InvalidDelegate':
        return 'the delegation names another redeemer than Bruno\'s Runner (InvalidDelegate)'
      case 'CannotUseADisabledDelegation':
        return 'the account disabled this delegation (CannotUseADisabledDelegation)'
      case 'ExecutionFailed':
        return 'a call of the batch failed (ExecutionFailed)'
      case 'DelegationExpired':
        return `the delegation's deadline ${args[0]} has passed (DelegationExpired)`
      case 'WrongBatch':
        return 'the redemption runs another batch than the one the delegation pins next: its payment first, then its calls (WrongBatch)'
      case 'RedeemedTwice':
        return 'the delegation ran its payment and its calls already (RedeemedTwice)'
      case 'NotPaidInThisTransaction':
        return "the delegation's calls run only in the transaction that made its payment (NotPaidInThisTransaction)"
      case 'NotPaymentPhase':
        return "the delegation's payment runs only in the payment phase of its own account's relay (NotPaymentPhase)"
      case 'NotBatchMode':
        return 'the redemption is not in batch mode (NotBatchMode)'
      case 'TermsNotThreeWords':
        return "the delegation's caveat terms are not two hashes and a deadline (TermsNotThreeWords)"
      default:
        return undefined
    }
  },
}

/**
 * MetaMask's delegator as the relay's texts name it: its name, this group's tools and its errors' words.
 *
 * @example
 * revertReason(error, 6, 'USDC', [metaMaskWords])
 */
export const metaMaskWords: DelegateWords = {
  name: 'MetaMask',
  tools: { batch: 'metamask_batch', execute: 'metamask_execute' },
  errors: metaMaskErrors,
}
