import type { Address, Hex } from 'viem'
import type { Network } from '../chain/networks.ts'
import type { ErrorVocabulary } from './revertReason.ts'
import type { RelayCall } from './schemas.ts'

/**
 * A delegate's signed batch, as far as the relay needs to know it. The relay never decodes a
 * delegate's calldata itself: the group that builds the batch (calibur) reads it, so another
 * delegate is one more reader, not a change to the relay.
 */
export interface BatchTerms {
  /** The delegated account that signed the batch (and the call's `to`). */
  readonly account: Address
  /** The delegate the batch is for: the account must be delegated to it when the relay runs. */
  readonly delegate: Address
  /** The signed payment-only batch, calldata to the account: it pays `amount` of `token` to `payee`, nothing else. */
  readonly paymentData: Hex
  /**
   * The most the payment batch may spend, given it by the Runner: the delegate's own code and the
   * token's transfer, which the delegate's group knows, with room.
   */
  readonly paymentGas: bigint
  /** What the payment batch pays: `token.transfer(payee, amount)`. */
  readonly token: Address
  readonly payee: Address
  readonly amount: bigint
  /** unix seconds after which the delegate refuses the payment batch; 0 for none. */
  readonly deadline: bigint
  /** What makes the payment unique: the delegate, the account and the signed nonce. */
  readonly identity: string
  /** The account's own calls as it would run them alone, after its payment (as they ran): replayed to say why they fail. */
  readonly ownCalls: { readonly from: Address; readonly to: Address; readonly data: Hex }
}

/**
 * Reads a call and its payment batch as one delegate's two signed batches — a payment-only batch,
 * then the account's own calls — `undefined` when the call is not this delegate's batch at all; a
 * `ToolError` naming what is wrong when it is one but breaks the rules (the payment batch does more
 * than pay the payee, the batches are for different accounts or out of order, a non-root key…).
 */
export interface BatchPaymentReader {
  /** The delegate's name, for messages: `Calibur`. */
  readonly delegate: string
  /** The delegate's errors, in words: how the relay explains a batch its simulation refuses. */
  readonly errors: ErrorVocabulary
  read(network: Network, call: RelayCall, paymentBatch: Hex | undefined): BatchTerms | undefined
}
