import {
  decodeAbiParameters,
  decodeFunctionData,
  encodeAbiParameters,
  encodeFunctionData,
  getAddress,
  hashStruct,
  isAddressEqual,
  keccak256,
  maxUint256,
  numberToHex,
  type Address,
  type Hex,
} from 'viem'
import { delegationManagerAbi } from './abi.ts'
import { metaMaskContracts, paymentFirstEnforcer } from './contracts.ts'

/** One call of a delegator's batch: ERC-7579's `Execution`. */
export interface Execution {
  readonly target: Address
  readonly value: bigint
  readonly callData: Hex
}

/** A caveat as signed (`enforcer`, `terms`) and as redeemed (`args`, which the signature does not cover). */
export interface Caveat {
  readonly enforcer: Address
  readonly terms: Hex
  readonly args: Hex
}

/** The delegation framework's `Delegation`: `delegator` lets `delegate` act for it within `caveats`. */
export interface Delegation {
  readonly delegate: Address
  readonly delegator: Address
  readonly authority: Hex
  readonly caveats: readonly Caveat[]
  readonly salt: bigint
  readonly signature: Hex
}

/** A root delegation: it draws on no other (`authority` = 2²⁵⁶−1, the framework's ROOT_AUTHORITY). */
export const ROOT_AUTHORITY = numberToHex(maxUint256, { size: 32 })

/** ERC-7579 mode: a batch of calls, each reverting the whole if it fails (CALLTYPE_BATCH, EXECTYPE_DEFAULT). */
export const BATCH_MODE: Hex = `0x01${'00'.repeat(31)}`

const caveatComponents = [
  { name: 'enforcer', type: 'address' },
  { name: 'terms', type: 'bytes' },
  { name: 'args', type: 'bytes' },
] as const
const executionsParameter = {
  type: 'tuple[]',
  components: [
    { name: 'target', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'callData', type: 'bytes' },
  ],
} as const
const delegationsParameter = {
  type: 'tuple[]',
  components: [
    { name: 'delegate', type: 'address' },
    { name: 'delegator', type: 'address' },
    { name: 'authority', type: 'bytes32' },
    { name: 'caveats', type: 'tuple[]', components: caveatComponents },
    { name: 'salt', type: 'uint256' },
    { name: 'signature', type: 'bytes' },
  ],
} as const
const termsParameters = [
  { name: 'paymentHash', type: 'bytes32' },
  { name: 'callsHash', type: 'bytes32' },
  { name: 'deadline', type: 'uint256' },
] as const

/** The EIP-712 types of a `Delegation`, as the DelegationManager hashes it. */
export const delegationTypes = {
  Delegation: [
    { name: 'delegate', type: 'address' },
    { name: 'delegator', type: 'address' },
    { name: 'authority', type: 'bytes32' },
    { name: 'caveats', type: 'Caveat[]' },
    { name: 'salt', type: 'uint256' },
  ],
  Caveat: [
    { name: 'enforcer', type: 'address' },
    { name: 'terms', type: 'bytes' },
  ],
} as const

/**
 * A batch of executions as ERC-7579 encodes it (`abi.encode(Execution[])`): a delegator's
 * execution calldata, whose hash a payment-first delegation pins.
 *
 * @example
 * encodeExecutions([{ target: usdc, value: 0n, callData: transfer }]) // '0x0000…20…'
 */
export function encodeExecutions(executions: readonly Execution[]): Hex {
  return encodeAbiParameters([executionsParameter], [executions])
}

/**
 * The hash a payment-first delegation pins a batch by: keccak256 of its ERC-7579 execution calldata.
 *
 * @example
 * batchHash([leg]) // '0x9c1f…'
 */
export function batchHash(executions: readonly Execution[]): Hex {
  return keccak256(encodeExecutions(executions))
}

/**
 * The delegation an account signs for Bruno: its Runner may redeem it twice and no more, in one
 * transaction — first the payment alone (`leg`), then the account's calls — each batch pinned by
 * its hash, and neither after `deadline`. One caveat, Bruno's `PaymentFirstEnforcer`, whose terms
 * are the two hashes and the deadline (96 bytes, whatever the batches). `salt` makes each
 * delegation distinct.
 *
 * @example
 * paymentFirstDelegation({ account, runner, leg: transferToPayee, calls: [approve, swap], deadline: 1767225600n, salt: 7n })
 */
export function paymentFirstDelegation(args: {
  readonly account: Address
  readonly runner: Address
  readonly leg: Execution
  readonly calls: readonly Execution[]
  readonly deadline: bigint
  readonly salt: bigint
}): Delegation {
  const terms = encodeAbiParameters(termsParameters, [batchHash([args.leg]), batchHash(args.calls), args.deadline])
  return {
    delegate: args.runner,
    delegator: args.account,
    authority: ROOT_AUTHORITY,
    caveats: [{ enforcer: paymentFirstEnforcer, terms, args: '0x' }],
    salt: args.salt,
    signature: '0x',
  }
}

/** A delegation as typed data to sign: the DelegationManager's domain, every uint256 a decimal string. */
export interface DelegationTypedData {
  readonly domain: { readonly name: 'DelegationManager'; readonly version: '1'; readonly chainId: number; readonly verifyingContract: Address }
  readonly types: typeof delegationTypes
  readonly primaryType: 'Delegation'
  readonly message: {
    readonly delegate: Address
    readonly delegator: Address
    readonly authority: Hex
    readonly caveats: readonly { readonly enforcer: Address; readonly terms: Hex }[]
    readonly salt: string
  }
}

/**
 * The typed data a wallet signs for `delegation` on `chainId` (eth_signTypedData_v4).
 *
 * @example
 * delegationTypedData(8453, delegation).domain // { name: 'DelegationManager', version: '1', chainId: 8453, verifyingContract: '0xdb9B…7dB3' }
 */
export function delegationTypedData(chainId: number, delegation: Delegation): DelegationTypedData {
  return {
    domain: { name: 'DelegationManager', version: '1', chainId, verifyingContract: metaMaskContracts.delegationManager },
    types: delegationTypes,
    primaryType: 'Delegation',
    message: {
      delegate: delegation.delegate,
      delegator: delegation.delegator,
      authority: delegation.authority,
      caveats: delegation.caveats.map(({ enforcer, terms }) => ({ enforcer, terms })),
      salt: delegation.salt.toString(),
    },
  }
}

/**
 * The delegation's hash as the DelegationManager computes it (`getDelegationHash`: the EIP-712
 * struct hash): what its enforcers count redemptions by, and what the relay knows it by.
 *
 * @example
 * delegationHash(delegation) // '0x5f1c…'
 */
export function delegationHash(delegation: Delegation): Hex {
  return hashStruct({
    types: delegationTypes,
    primaryType: 'Delegation',
    data: { ...delegation, caveats: delegation.caveats.map(({ enforcer, terms }) => ({ enforcer, terms })) },
  })
}

/**
 * The Runner's call to the DelegationManager that redeems a signed payment-first delegation for
 * one of its two batches: the payment (its leg), or the calls.
 *
 * @example
 * encodeRedemption(signed, [leg]) // '0xcef6d209…'
 */
export function encodeRedemption(delegation: Delegation, executions: readonly Execution[]): Hex {
  return encodeFunctionData({
    abi: delegationManagerAbi,
    functionName: 'redeemDelegations',
    args: [[permissionContext(delegation)], [BATCH_MODE], [encodeExecutions(executions)]],
  })
}

/**
 * A root delegation as the DelegationManager takes it: a permission context, the chain of one.
 *
 * @example
 * permissionContext(signed) // '0x…'
 */
export function permissionContext(delegation: Delegation): Hex {
  return encodeAbiParameters([delegationsParameter], [[delegation]])
}

/** A redemption read back: the one delegation it redeems and the batch it runs. */
export interface Redemption {
  readonly delegation: Delegation
  readonly executions: readonly Execution[]
}

/**
 * Reads calldata to the DelegationManager as one redemption of one delegation in batch mode;
 * `undefined` when it is not `redeemDelegations` at all, a string naming what is wrong when it is
 * one of another shape.
 *
 * @example
 * readRedemption(encodeRedemption(signed, calls)) // { delegation: signed, executions: calls }
 */
export function readRedemption(data: Hex): Redemption | string | undefined {
  let decoded
  try {
    decoded = decodeFunctionData({ abi: delegationManagerAbi, data })
  } catch {
    return undefined
  }
  if (decoded.functionName !== 'redeemDelegations') return undefined
  const [contexts, modes, executionDatas] = decoded.args
  if (contexts.length !== 1 || modes.length !== 1 || executionDatas.length !== 1) return `it redeems ${contexts.length} delegation chains, not 1`
  if (modes[0]!.toLowerCase() !== BATCH_MODE) return `its mode is ${modes[0]}, not a batch that reverts on failure (${BATCH_MODE})`
  try {
    const [chain] = decodeAbiParameters([delegationsParameter], contexts[0]!)
    if (chain.length !== 1) return `its chain holds ${chain.length} delegations, not 1 (a root delegation from the account)`
    const [delegation] = chain
    const [executions] = decodeAbiParameters([executionsParameter], executionDatas[0]!)
    if (delegation!.caveats.some((caveat) => caveat.args !== '0x')) return 'its caveats carry arguments: a payment-first delegation\'s take none'
    return { delegation: delegation!, executions }
  } catch {
    return 'its delegation or batch does not decode'
  }
}

/** What a payment-first delegation pins: its two batches' hashes and its deadline (unix seconds, inclusive). */
export interface PaymentFirstTerms {
  readonly paymentHash: Hex
  readonly callsHash: Hex
  readonly deadline: bigint
}

/**
 * Reads a delegation as `paymentFirstDelegation` builds it and returns what it pins — or a string
 * naming how it differs (another redeemer, another authority, other caveats).
 *
 * @example
 * readPaymentFirstDelegation(delegation, runner) // { paymentHash, callsHash, deadline }
 */
export function readPaymentFirstDelegation(delegation: Delegation, runner: Address): PaymentFirstTerms | string {
  if (!isAddressEqual(delegation.delegate, runner)) return `it delegates to ${delegation.delegate}, not to Bruno's Runner ${runner}`
  if (delegation.authority.toLowerCase() !== ROOT_AUTHORITY) return 'it is not a root delegation (authority must be 2²⁵⁶−1)'
  const [caveat, ...rest] = delegation.caveats
  if (!caveat || rest.length > 0 || !isAddressEqual(caveat.enforcer, paymentFirstEnforcer)) return `its caveats are not the one payment-first caveat (Bruno's enforcer ${paymentFirstEnforcer})`
  if (caveat.terms.length !== 2 + 96 * 2) return 'its caveat\'s terms are not the two batch hashes and the deadline (96 bytes)'
  const [paymentHash, callsHash, deadline] = decodeAbiParameters(termsParameters, caveat.terms)
  return { paymentHash, callsHash, deadline }
}

/**
 * The batches a payment-first delegation's hashes pin, checked: `payment` (one call: the leg) and
 * `calls` — or a string naming which differs from what was signed.
 *
 * @example
 * pinnedBatches(terms, [leg], calls) // { leg, calls }
 */
export function pinnedBatches(
  terms: PaymentFirstTerms,
  payment: readonly Execution[],
  calls: readonly Execution[],
): { leg: Execution; calls: readonly Execution[] } | string {
  if (batchHash(payment) !== terms.paymentHash) return 'the payment batch is not the one the delegation pins (its hash differs)'
  if (batchHash(calls) !== terms.callsHash) return 'the calls are not the ones the delegation pins (their hash differs)'
  if (payment.length !== 1) return `its payment batch holds ${payment.length} calls, not 1`
  return { leg: payment[0]!, calls }
}

/**
 * The two batches metamask_batch returns beside the delegation, for metamask_execute: the hashes
 * are what the account signs, these are what they are hashes of (`abi.encode(Execution[],
 * Execution[])`).
 *
 * @example
 * encodeBatches([leg], calls) // '0x…'
 */
export function encodeBatches(payment: readonly Execution[], calls: readonly Execution[]): Hex {
  return encodeAbiParameters([executionsParameter, executionsParameter], [payment, calls])
}

/**
 * `encodeBatches` read back; `undefined` when it does not decode.
 *
 * @example
 * decodeBatches(encodeBatches([leg], calls)) // { payment: [leg], calls }
 */
export function decodeBatches(data: Hex): { payment: readonly Execution[]; calls: readonly Execution[] } | undefined {
  try {
    const [payment, calls] = decodeAbiParameters([executionsParameter, executionsParameter], data)
    return { payment, calls }
  } catch {
    return undefined
  }
}

/**
 * `delegation` with the account's signature, checksummed as the relay compares addresses.
 *
 * @example
 * signedDelegation(delegation, await wallet.signTypedData(delegationTypedData(chainId, delegation)))
 */
export function signedDelegation(delegation: Delegation, signature: Hex): Delegation {
  return { ...delegation, delegate: getAddress(delegation.delegate), delegator: getAddress(delegation.delegator), signature }
}
