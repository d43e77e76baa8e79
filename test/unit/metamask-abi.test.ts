import t from 'tap'
import { DelegationManager, EIP7702StatelessDeleGator, LimitedCallsEnforcer, LogicalOrWrapperEnforcer } from '@metamask/delegation-abis'
import type { Abi, AbiFunction } from 'viem'
import { formatAbiItem } from 'viem/utils'
import { delegationManagerAbi, delegatorAbi, limitedCallsAbi, logicalOrWrapperAbi } from '../../plugins/metamask/abi.ts'

// The metamask group's ABIs are its own transcription (a production install carries no
// @metamask/delegation-abis): each item must be, signature, outputs and mutability, MetaMask's.

const shape = (item: Abi[number]) =>
  item.type === 'function' ? `${formatAbiItem(item)} ${(item as AbiFunction).stateMutability} → (${(item as AbiFunction).outputs.map((output) => output.type).join(',')})` : formatAbiItem(item)

for (const [name, ours, theirs] of [
  ['DelegationManager', delegationManagerAbi, DelegationManager],
  ['EIP7702StatelessDeleGator', delegatorAbi, EIP7702StatelessDeleGator],
  ['LimitedCallsEnforcer', limitedCallsAbi, LimitedCallsEnforcer],
  ['LogicalOrWrapperEnforcer', logicalOrWrapperAbi, LogicalOrWrapperEnforcer],
] as const) {
  t.test(`${name}: every item as @metamask/delegation-abis declares it`, async (t) => {
    const published = new Set((theirs as Abi).filter((item) => item.type === 'function' || item.type === 'error').map(shape))
    for (const item of ours as Abi) t.ok(published.has(shape(item)), shape(item))
  })
}
