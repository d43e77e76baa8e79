import type { Address, Hex, Log } from 'viem'
import type { Network } from '../chain/networks.ts'
import type { ErrorVocabulary } from './revertReason.ts'
import type { RelayCall } from './schemas.ts'

/**
 * A delegate's signed batch, as far as the relay needs to know it: what `Delegate.read` finds in it.
 */
export interface BatchTerms {
  /** The delegated account that signed the batch. */
  readonly account: Address
  /** The delegate the batch is for: the account must be delegated to it when the relay runs. */
  readonly delegate: Address
  /**
   * Where both batches go (the call's `to`): the account itself when its delegate checks the
   * signature (Calibur), or the contract that makes the account run them (a delegation manager, an EntryPoint).
   */
  readonly target: Address
  /** The signed payment-only batch, calldata to `target`: it pays `amount` of `token` to `payee`, nothing else. */
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
  /**
   * The least stipend the call phase needs whatever its calls use: what `target` reserves before it
   * runs them (an ERC-4337 EntryPoint refuses a bundle whose gas cannot cover the operation's
   * signed limits). None: the stipend is sized from what the calls were measured to use.
   */
  readonly callGasFloor?: bigint
  /**
   * For a `target` that catches the account's failures and returns normally (an EntryPoint logs a
   * failed operation and goes on): why the call phase failed, read from the runner transaction's
   * logs, else `undefined`. The relay then reports the call failed on chain (paid, as any), and,
   * since the Runner cannot see such a failure when it simulates, refuses at submit a batch whose
   * calls fail when replayed as `ownCalls`.
   */
  swallowedFailure?(logs: readonly Log[]): string | undefined
}

/**
 * An EIP-7702 delegate the relay serves, as its group describes it to core: how to recognise an
 * account delegated to it, its next nonce (the `account` view), its signed batches read back to
 * their payment terms, its errors in words, and its tools, named in the relay's texts. Core never
 * decodes a delegate's calldata: another delegate is one more `Delegate`, not a change to the relay.
 */
export interface Delegate {
  /** Its name in texts and the `account` view: `Calibur`. */
  readonly name: string
  /** Its group's tools, named in the relay's texts: `batch` builds the payment-first batches to sign, `execute` turns them signed into submit's `{call, payment}`. */
  readonly tools: { readonly batch: string; readonly execute: string }
  /** Its errors, in words: how the relay explains a batch its simulation refuses. */
  readonly errors: ErrorVocabulary
  /** Its contract on `network` (an account whose EIP-7702 code is `0xef0100 ‖ address` is delegated to it), if it runs there. */
  address(network: Network): Address | undefined
  /**
   * The nonce an account delegated to it spends with its next signed batch (the `account` view's
   * `delegateNonce`). A delegate whose batches carry no sequential nonce leaves it out: MetaMask's
   * delegations are each single-use by their own salt.
   */
  nextNonce?(network: Network, account: Address): Promise<bigint>
  /**
   * For a delegate that needs a step after the delegation before it runs batches (a proxy whose
   * implementation is set by a signed call, a module to install): what an account delegated to it
   * still lacks, in words naming that step — `account` shows it as `delegateNotReady` —, else
   * `undefined`. Left out: delegated is ready.
   */
  readiness?(network: Network, account: Address): Promise<string | undefined>
  /**
   * What the call spends if it is a signed batch of this delegate's, however it is paid (a batch
   * any executor may run can be the call of a signed-transfer payment): the account and the nonce,
   * as a string unique to them (`calibur:<chain>:<account>:<nonce>`); `undefined` when the call is
   * not one. No two active submissions may spend the same one, so one signed batch is never paid twice.
   * `paymentBatch` is the submission's payment batch (`undefined` for a signed transfer). A `ToolError`
   * when the call reaches this delegate's batches in a way the relay must not run, since the Runner
   * runs it as msg.sender: a batch whose calls may run only after its own payment batch, under
   * another payment; a call to the batches' target (a delegation manager) that is not exactly one batch.
   */
  callSpends(network: Network, call: RelayCall, paymentBatch?: Hex): string | undefined
  /**
   * Reads a call and its payment batch as this delegate's two signed batches — a payment-only
   * batch, then the account's own calls — `undefined` when the call is not this delegate's batch at
   * all; a `ToolError` naming what is wrong when it is one but breaks the rules (the payment batch
   * does more than pay the payee, the batches are for different accounts or out of order, a non-root key…).
   */
  read(network: Network, call: RelayCall, paymentBatch: Hex | undefined): BatchTerms | undefined
}

/** What the relay's texts need of a delegate: its name, its tools and its errors' words. */
export type DelegateWords = Pick<Delegate, 'name' | 'tools' | 'errors'>

/**
 * How the relay's texts name the delegate batches it takes: the groups' batch tools, or that none is
 * served here.
 *
 * @example
 * delegateBatchTools([calibur]) // 'a Calibur batch (calibur_batch)'
 * delegateBatchTools([]) // 'a delegate batch (no delegate group is enabled on this server)'
 */
export function delegateBatchTools(delegates: readonly Pick<Delegate, 'name' | 'tools'>[]): string {
  if (delegates.length === 0) return 'a delegate batch (no delegate group is enabled on this server)'
  return delegates.map((delegate) => `a ${delegate.name} batch (${delegate.tools.batch})`).join(' or ')
}

/**
 * The served delegates' batch tools, for texts that send the caller to one; `undefined` when no
 * delegate group is served (the text then says what stands in for them).
 *
 * @example
 * batchToolNames([calibur]) // 'calibur_batch'
 * batchToolNames([]) // undefined
 */
export function batchToolNames(delegates: readonly Pick<Delegate, 'tools'>[]): string | undefined {
  return delegates.map((delegate) => delegate.tools.batch).join(' or ') || undefined
}
