import type { Abi, Hex } from 'viem'
import type { DelegateWords, ErrorVocabulary } from '../../core/plugin.ts'
import { caliburAbi } from './abi.ts'

/**
 * Calibur's errors in words (DESIGN §4's selectors), for the relay's refusals and this group's own:
 * what a signed batch did wrong, and what a failing call inside it said.
 *
 * @example
 * describeRevertData(data, 6, 'USDC', [caliburWords]) // 'the batch's deadline has passed (SignatureExpired)'
 */
export const caliburErrors: ErrorVocabulary = {
  abi: caliburAbi.filter((item) => item.type === 'error') as Abi,
  describe(name: string, args: readonly unknown[], nested: (data: Hex) => string) {
    switch (name) {
      case 'CallFailed':
        return nested(args[0] as Hex)
      case 'InvalidSignature':
        return 'the signature does not recover to the account (InvalidSignature)'
      case 'InvalidNonce':
        return 'the batch nonce is not the account\'s current one: it was used already or skips ahead (InvalidNonce)'
      case 'SignatureExpired':
        return 'the batch\'s deadline has passed (SignatureExpired)'
      case 'Unauthorized':
        return 'the batch names another executor (Unauthorized)'
      default:
        return undefined
    }
  },
}

/**
 * Calibur as the relay's texts name it: its name, this group's tools and its errors' words.
 *
 * @example
 * revertReason(error, 6, 'USDC', [caliburWords]) // the relay's words, Calibur's errors and tools included
 */
export const caliburWords: DelegateWords = {
  name: 'Calibur',
  tools: { batch: 'calibur_batch', execute: 'calibur_execute' },
  errors: caliburErrors,
}
