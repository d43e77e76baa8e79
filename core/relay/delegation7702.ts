import { getAddress, isAddressEqual, type Address, type Hex, type SignedAuthorizationList, type StateOverride } from 'viem'
import { recoverAuthorizationAddress } from 'viem/utils'
import type { Network } from '../chain/networks.ts'
import { ToolError } from '../tool/tool.ts'
import { yParityOf, type SignedAuthorization } from './schemas.ts'
import type { DelegateWords } from './delegate.ts'

/** viem's form of signed 7702 authorizations; `v` is dropped (yParity, given or derived from `v`, says it all). */
export function viemAuthorizations(list: readonly SignedAuthorization[] | undefined): SignedAuthorizationList | undefined {
  return list?.map((item) => ({ address: getAddress(item.address), chainId: item.chainId, nonce: item.nonce, r: item.r as Hex, s: item.s as Hex, yParity: yParityOf(item) }))
}

/** An account's EIP-7702 code is this prefix and its delegate's address. */
export const DELEGATION_PREFIX = '0xef0100'

/**
 * The code EIP-7702 gives an account delegated to `delegate`: `0xef0100 ‖ delegate`, in lower case
 * (what `eth_getCode` answers, and what a state override or a code hash is taken of).
 *
 * @example
 * delegationCode('0x000000009B1D0aF20D8C6d0A44e162d11F9b8f00') // '0xef0100000000009b1d0af20d8c6d0a44e162d11f9b8f00'
 */
export function delegationCode(delegate: Address): Hex {
  return `${DELEGATION_PREFIX}${delegate.slice(2).toLowerCase()}`
}

/**
 * Intrinsic gas of one EIP-7702 authorization in the runner's transaction (PER_EMPTY_ACCOUNT_COST;
 * 12,500 of it is refunded when the account exists and the authorization is valid at inclusion,
 * which neither a gas limit nor a charge counts on: `readAuthorizations`).
 */
export const AUTHORIZATION_GAS = 25_000n

/** The delegate a batch tool prepares for: its words and its contract on the network. */
export type DelegateAt = Pick<DelegateWords, 'name' | 'tools'> & { readonly address: Address }

/**
 * Reads a relay's EIP-7702 authorizations as the chain will apply them, before anything is signed
 * (quote, submit) and before every send, and refuses one it would skip — the chain bills a skipped
 * one its 25,000 gas, and nothing in the simulation fails — or one of an account the relay does not
 * run: each is for this chain (or any), recovers to a signer, is that signer's only one, is signed
 * by `account` (the account whose calls the relay runs: a batch's account, which is its payer, or a
 * signed transfer's `call.to`), carries the signer's current EOA nonce (the runner, not the
 * account, sends the transaction), and the signer's code is none or a delegation. Returns the gas
 * the runner charges for them: 25,000 each, whole. The chain refunds 12,500 of one whose authority
 * exists if it is still valid at inclusion, but its signer can make it stale before then (a
 * transaction of its own, or the same nonce's authorization carried by another sponsor) and the
 * Runner cannot see which happened: counting on the refund would let a payer take it from the runner.
 *
 * @example
 * await readAuthorizations(network, [signed], account) // 25_000n
 */
export async function readAuthorizations(network: Network, authorizationList: readonly SignedAuthorization[] | undefined, account: Address): Promise<bigint> {
  if (!authorizationList || authorizationList.length === 0) return 0n
  const { config, client } = network
  const signers: Address[] = []
  for (const [index, item] of authorizationList.entries()) {
    const name = `authorizationList[${index}]`
    if (item.chainId !== 0 && item.chainId !== config.chainId) throw new ToolError(`${name} is for chain ${item.chainId}, not ${config.name} (${config.chainId})`)
    let signer: Address
    try {
      signer = await recoverAuthorizationAddress({ authorization: viemAuthorizations([item])![0]! })
    } catch {
      throw new ToolError(`${name} has a bad signature: it recovers to no address`)
    }
    if (!isAddressEqual(signer, account)) {
      throw new ToolError(`${name} is signed by ${signer}, not by the account ${account} whose calls the relay runs: only that account's own authorization is sent with them`)
    }
    if (signers.some((seen) => isAddressEqual(seen, signer))) throw new ToolError(`${name} is a second authorization by ${signer}: the chain would skip it (its nonce is spent by the first), so give one`)
    signers.push(signer)
  }
  const states = await Promise.all(signers.map((address) => Promise.all([client.getTransactionCount({ address }), client.getCode({ address })])))
  for (const [index, item] of authorizationList.entries()) {
    const [nonce, code] = states[index]!
    if (item.nonce !== nonce) {
      throw new ToolError(
        `authorizationList[${index}] carries nonce ${item.nonce}; the account's EOA nonce is ${nonce}. Bruno's runner sends the ` +
          'transaction, not the account, so the authorization must carry the account\'s current nonce',
      )
    }
    if (code && code !== '0x' && !code.toLowerCase().startsWith(DELEGATION_PREFIX)) throw new ToolError(`${signers[index]} is a contract: it cannot be delegated`)
  }
  return AUTHORIZATION_GAS * BigInt(authorizationList.length)
}

/**
 * For a batch whose account is delegated by an EIP-7702 authorization sent in the same runner
 * transaction (submit's authorizationList): checks that the list is the account's one
 * authorization to `delegate`, and what `readAuthorizations` checks of it, and returns the state override that shows the account delegated, to read and measure the
 * batch as it will run. No list: `undefined`.
 *
 * @example
 * await authorizationOverride(network, account, [signedAuthorization], { name: 'Calibur', tools, address: calibur })
 * // [{ address: account, code: '0xef0100000000005c84f8fd50b21cac312528a64437030e' }]
 */
export async function authorizationOverride(
  network: Network,
  account: Address,
  authorizationList: readonly SignedAuthorization[] | undefined,
  delegate: DelegateAt,
): Promise<StateOverride | undefined> {
  if (!authorizationList || authorizationList.length === 0) return undefined
  const [item] = authorizationList
  if (authorizationList.length > 1 || !item) throw new ToolError(`authorizationList: give only the account's own authorization to ${delegate.name}`)
  if (!isAddressEqual(getAddress(item.address), delegate.address)) {
    throw new ToolError(`authorizationList[0] delegates to ${item.address}, not to ${delegate.name} (${delegate.address})`)
  }
  await readAuthorizations(network, authorizationList, account)
  return [{ address: account, code: delegationCode(delegate.address) }]
}

/**
 * Refuses an account not delegated to `delegate` (no authorizationList given), naming the fix: its
 * signed 7702 authorization in authorizationList, or a signed transfer instead. Read before anything
 * is asked of the account's delegate, which an undelegated account cannot answer.
 *
 * @example
 * await requireDelegatedTo(network, '0x7099…79C8', calibur) // throws ToolError('0x7099…79C8 has no code: it is not delegated to Calibur (0x…). Delegate it first: …')
 */
export async function requireDelegatedTo(network: Network, account: Address, delegate: DelegateAt): Promise<void> {
  const code = await network.client.getCode({ address: account })
  if (code && code.toLowerCase() === delegationCode(delegate.address)) return
  const what = !code || code === '0x' ? 'has no code' : code.toLowerCase().startsWith(DELEGATION_PREFIX) ? `is delegated to 0x${code.slice(8)}` : 'is a contract'
  throw new ToolError(
    `${account} ${what}: it is not delegated to ${delegate.name} (${delegate.address}). Delegate it first: have its wallet sign an EIP-7702 ` +
      `authorization to ${delegate.name} (nonce = its current EOA nonce) and pass it as authorizationList to ${delegate.tools.batch}, ` +
      `${delegate.tools.execute} and submit (the runner sends it in the same transaction), or pay with a signed USDC transfer (payment_authorization)`,
  )
}
