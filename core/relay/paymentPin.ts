import { getAddress, type Address } from 'viem'
import type { Network } from '../chain/networks.ts'
import { ToolError } from '../tool/tool.ts'
import type { BatchTerms, Delegate } from './delegate.ts'
import { delegationCode } from './delegation7702.ts'
import { revertData } from './revertReason.ts'

/** Who runs a payment batch in `requirePinnedPayment`: an address with no role anywhere (not the Runner, not an operator). */
export const STRANGER: Address = getAddress('0x5742000000000000000000000000000000005742')

/**
 * Refuses a payment batch that anyone could run: it is sent to its target as a stranger would send
 * it (`STRANGER`, the account delegated to its delegate as the relay will have it), and a run that
 * does not revert is refused. Such a batch could be run — or, for an ERC-4337 operation, its nonce
 * spent — by whoever holds it before the Runner sends it: the payee would keep the payment, the
 * account's calls would never run, and the runner's transaction would revert at its cost, counted
 * against a payer who did nothing. A pinned payment reverts here: Calibur's names the Runner as
 * executor, MetaMask's delegation the Runner as its delegate, and a payment can ask the Runner's
 * `paying()` (a RunnerGate paymaster does). A run the node cannot answer (not a revert) is thrown as is.
 *
 * @example
 * await requirePinnedPayment(network, terms, calibur) // throws ToolError('refused: the Calibur payment batch can be run by anyone, …')
 */
export async function requirePinnedPayment(network: Network, terms: Pick<BatchTerms, 'account' | 'delegate' | 'target' | 'paymentData'>, delegate: Pick<Delegate, 'name' | 'tools'>): Promise<void> {
  try {
    await network.client.call({
      account: STRANGER,
      to: terms.target,
      data: terms.paymentData,
      stateOverride: [{ address: terms.account, code: delegationCode(terms.delegate) }],
      blockTag: 'latest',
    })
  } catch (error) {
    if (revertData(error) !== undefined) return
    throw error
  }
  throw new ToolError(
    `refused: the ${delegate.name} payment batch of ${terms.account} can be run by anyone, not only by Bruno's Runner: whoever holds it could run it first ` +
      '(the payee would keep the payment, your calls would not run, and the relay would fail). Nothing was sent; ' +
      `sign a payment batch that only the Runner can run, as ${delegate.tools.batch} builds it`,
  )
}
