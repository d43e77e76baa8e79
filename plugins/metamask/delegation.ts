import {
  decodeAbiParameters,
  decodeFunctionData,
  encodeAbiParameters,
  encodeFunctionData,
  getAddress,
  hashStruct,
  isAddressEqual,
  maxUint256,
  numberToHex,
  type Address,
  type Hex,
} from 'viem'
import { delegationManagerAbi } from './abi.ts'
import { metaMaskContracts } from './contracts.ts'

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

/** The two redemptions a payment-first delegation allows, by the caveat group each picks. */
export const PAYMENT_GROUP = 0n
export const CALLS_GROUP = 1n

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
const caveatGroupsParameter = { type: 'tuple[]', components: [{ name: 'caveats', type: 'tuple[]', components: caveatComponents }] } as const
const selectedGroupParameter = {
  type: 'tuple',
  components: [
    { name: 'groupIndex', type: 'uint256' },
    { name: 'caveatArgs', type: 'bytes[]' },
  ],
} as const

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
 * execution calldata, and the terms `ExactExecutionBatchEnforcer` pins.
 *
 * @example
 * encodeExecutions([{ target: usdc, value: 0n, callData: transfer }]) // '0x0000…20…'
 */
export function encodeExecutions(executions: readonly Execution[]): Hex {
  return encodeAbiParameters([executionsParameter], [executions])
}

/**
 * The delegation an account signs for Bruno: its Runner may redeem it twice and no more — first
 * the payment alone (`leg`, caveat group 0, at most one redemption so far), then the account's
 * calls (group 1, at most two) — each batch pinned byte for byte, and neither after `deadline`.
 * One `LogicalOrWrapperEnforcer` caveat holds both groups; the two `LimitedCallsEnforcer`s count
 * the same delegation, so the payment runs once, and only first, and the calls once. A
 * `TimestampEnforcer` caveat ends it after `deadline` (its bound is exclusive: `deadline + 1`).
 * `salt` makes each delegation distinct.
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
  const pinned = (executions: readonly Execution[], limit: bigint): Caveat[] => [
    { enforcer: metaMaskContracts.exactExecutionBatch, terms: encodeExecutions(executions), args: '0x' },
    { enforcer: metaMaskContracts.limitedCalls, terms: numberToHex(limit, { size: 32 }), args: '0x' },
  ]
  const groups = [{ caveats: pinned([args.leg], 1n) }, { caveats: pinned(args.calls, 2n) }]
  return {
    delegate: args.runner,
    delegator: args.account,
    authority: ROOT_AUTHORITY,
    caveats: [
      { enforcer: metaMaskContracts.logicalOrWrapper, terms: encodeAbiParameters([caveatGroupsParameter], [groups]), args: '0x' },
      { enforcer: metaMaskContracts.timestamp, terms: numberToHex(args.deadline + 1n, { size: 32 }), args: '0x' },
    ],
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
 * one of its two batches: the payment (`PAYMENT_GROUP`, its leg) or the calls (`CALLS_GROUP`).
 *
 * @example
 * encodeRedemption(signed, PAYMENT_GROUP, [leg]) // '0xcef6d209…'
 */
export function encodeRedemption(delegation: Delegation, group: bigint, executions: readonly Execution[]): Hex {
  const [wrapper, ...others] = delegation.caveats
  // The group's two caveats (the exact batch, the count) take no arguments.
  const selected = encodeAbiParameters([selectedGroupParameter], [{ groupIndex: group, caveatArgs: ['0x', '0x'] }])
  const redeemed = { ...delegation, caveats: [{ ...wrapper!, args: selected }, ...others] }
  return encodeFunctionData({
    abi: delegationManagerAbi,
    functionName: 'redeemDelegations',
    args: [[encodeAbiParameters([delegationsParameter], [[redeemed]])], [BATCH_MODE], [encodeExecutions(executions)]],
  })
}

/** A redemption read back: the one delegation it redeems, the caveat group it picks and the batch it runs. */
export interface Redemption {
  readonly delegation: Delegation
  readonly group: bigint
  readonly executions: readonly Execution[]
}

/**
 * Reads calldata to the DelegationManager as one redemption of one delegation in batch mode;
 * `undefined` when it is not `redeemDelegations` at all, a string naming what is wrong when it is
 * one of another shape.
 *
 * @example
 * readRedemption(encodeRedemption(signed, CALLS_GROUP, calls)) // { delegation: signed, group: 1n, executions: calls }
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
    const [wrapper] = delegation!.caveats
    if (!wrapper) return 'its delegation has no caveats'
    const [selected] = decodeAbiParameters([selectedGroupParameter], wrapper.args)
    const [executions] = decodeAbiParameters([executionsParameter], executionDatas[0]!)
    // The arguments are the redeemer's, outside the signature: the delegation is what was signed.
    const caveats = delegation!.caveats.map((caveat) => ({ ...caveat, args: '0x' as Hex }))
    return { delegation: { ...delegation!, caveats }, group: selected.groupIndex, executions }
  } catch {
    return 'its delegation, caveat arguments or batch do not decode'
  }
}

/**
 * Reads a delegation as `paymentFirstDelegation` builds it and returns the two batches it pins —
 * or a string naming how it differs (another redeemer, another authority, other caveats).
 *
 * @example
 * readPaymentFirstDelegation(delegation, runner) // { leg, calls }
 */
export function readPaymentFirstDelegation(
  delegation: Delegation,
  runner: Address,
): { leg: Execution; calls: readonly Execution[]; deadline: bigint } | string {
  if (!isAddressEqual(delegation.delegate, runner)) return `it delegates to ${delegation.delegate}, not to Bruno's Runner ${runner}`
  if (delegation.authority.toLowerCase() !== ROOT_AUTHORITY) return 'it is not a root delegation (authority must be 2²⁵⁶−1)'
  const [wrapper, timestamp, ...rest] = delegation.caveats
  const shape = 'its caveats are not the payment-first pair of groups and a deadline'
  if (!wrapper || !timestamp || rest.length > 0) return shape
  if (!isAddressEqual(wrapper.enforcer, metaMaskContracts.logicalOrWrapper) || !isAddressEqual(timestamp.enforcer, metaMaskContracts.timestamp)) return shape
  // TimestampEnforcer's terms: 16 bytes "after" (none), 16 bytes "before" (exclusive).
  const before = timestamp.terms.length === 66 ? BigInt(timestamp.terms) : 0n
  if (before < 2n || before >= 1n << 128n) return 'its deadline caveat does not end it at a time (TimestampEnforcer: no "after", a "before")'
  let groups
  try {
    ;[groups] = decodeAbiParameters([caveatGroupsParameter], wrapper.terms)
  } catch {
    return 'its caveat groups do not decode'
  }
  const pinned = groups.map((group) => {
    const [exact, limited, ...more] = group.caveats
    if (!exact || !limited || more.length > 0) return undefined
    if (!isAddressEqual(exact.enforcer, metaMaskContracts.exactExecutionBatch) || !isAddressEqual(limited.enforcer, metaMaskContracts.limitedCalls)) return undefined
    try {
      return { executions: decodeAbiParameters([executionsParameter], exact.terms)[0], limit: limited.terms.length === 66 ? BigInt(limited.terms) : -1n }
    } catch {
      return undefined
    }
  })
  const [payment, calls] = pinned
  if (pinned.length !== 2 || !payment || !calls) return shape
  if (payment.limit !== 1n || calls.limit !== 2n) return `its groups allow ${payment.limit} and ${calls.limit} redemptions, not 1 (the payment) and 2 (the calls, after it)`
  if (payment.executions.length !== 1) return `its payment group pins ${payment.executions.length} calls, not 1`
  return { leg: payment.executions[0]!, calls: calls.executions, deadline: before - 1n }
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
