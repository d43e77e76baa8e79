import t from 'tap'
import { DelegationManager, EIP7702StatelessDeleGator, ICaveatEnforcer } from '@metamask/delegation-abis'
import type { Abi, AbiFunction } from 'viem'
import { formatAbiItem } from 'viem/utils'
import { paymentFirstEnforcerAbi } from '../../contracts/abi.ts'
import { delegationManagerAbi, delegatorAbi } from '../../plugins/metamask/abi.ts'

// The metamask group's ABIs are its own transcription (a production install carries no
// @metamask/delegation-abis): each item must be, signature, outputs and mutability, MetaMask's.

const shape = (item: Abi[number]) =>
  item.type === 'function' ? `${formatAbiItem(item)} ${(item as AbiFunction).stateMutability} → (${(item as AbiFunction).outputs.map((output) => output.type).join(',')})` : formatAbiItem(item)

for (const [name, ours, theirs] of [
  ['DelegationManager', delegationManagerAbi, DelegationManager],
  ['EIP7702StatelessDeleGator', delegatorAbi, EIP7702StatelessDeleGator],
] as const) {
  t.test(`${name}: every item as @metamask/delegation-abis declares it`, async (t) => {
    const published = new Set((theirs as Abi).filter((item) => item.type === 'function' || item.type === 'error').map(shape))
    for (const item of ours as Abi) t.ok(published.has(shape(item)), shape(item))
  })
}

// Bruno's own enforcer is called by MetaMask's manager through ICaveatEnforcer: each of its hooks
// must be there, with the selector the manager calls.
t.test('PaymentFirstEnforcer: every ICaveatEnforcer hook, as @metamask/delegation-abis declares it', async (t) => {
  const ours = new Set((paymentFirstEnforcerAbi as Abi).filter((item) => item.type === 'function').map((item) => formatAbiItem(item)))
  const hooks = (ICaveatEnforcer as Abi).filter((item) => item.type === 'function')
  t.equal(hooks.length, 4)
  for (const hook of hooks) t.ok(ours.has(formatAbiItem(hook)), formatAbiItem(hook))
})
