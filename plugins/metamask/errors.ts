import type { Abi, Hex } from 'viem'
import type { DelegateWords, ErrorVocabulary } from '../../core/plugin.ts'
import { delegationManagerAbi, delegatorAbi } from './abi.ts'

/**
 * The DelegationManager's and the delegator's errors in words: what a redemption did wrong. The
 * caveat enforcers revert with strings (`LimitedCallsEnforcer:limit-exceeded`), which the relay
 * says as they are.
 *
 * @example
 * describeRevertData(data, 6, 'USDC', [metaMaskWords]) // 'the account disabled this delegation (CannotUseADisabledDelegation)'
 */
export const metaMaskErrors: ErrorVocabulary = {
  abi: [...delegationManagerAbi, ...delegatorAbi].filter((item) => item.type === 'error') as Abi,
  describe(name: string, _args: readonly unknown[], _nested: (data: Hex) => string) {
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
