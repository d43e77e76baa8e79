import { getAddress } from 'viem'
import { CheckFailed, notAnswered, type Network } from '../../core/plugin.ts'
import { delegationManagerAbi, delegatorAbi, logicalOrWrapperAbi } from './abi.ts'
import { metaMaskContracts } from './contracts.ts'

/**
 * The metamask group's preflight check: MetaMask's delegation framework v1.3.0 where this group
 * expects it, recognised by what it answers — the DelegationManager's EIP-712 domain
 * (`DelegationManager` version `1`, this chain, its own address: what the account signs), the
 * delegator and the wrapper naming that manager, and code at each enforcer a payment-first
 * delegation uses.
 *
 * @example
 * await checkMetaMask(networks.get('base')) // 'DelegationManager v1 at 0xdb9B…7dB3 (chain id 8453), its delegator and enforcers'
 */
export async function checkMetaMask(network: Network): Promise<string> {
  const { client } = network
  const { chainId } = network.config
  const { delegationManager, delegator, logicalOrWrapper, exactExecutionBatch, limitedCalls, timestamp } = metaMaskContracts
  const missing = []
  for (const [name, address] of Object.entries({ delegationManager, delegator, logicalOrWrapper, exactExecutionBatch, limitedCalls, timestamp })) {
    const code = await client.getCode({ address })
    if (!code || code === '0x') missing.push(`${name} ${address}`)
  }
  if (missing.length > 0) throw new CheckFailed(`no code at ${missing.join(', ')}: MetaMask's delegation framework v1.3.0 is not deployed on this chain`)
  const domain = await client.readContract({ address: delegationManager, abi: delegationManagerAbi, functionName: 'eip712Domain' }).catch(notAnswered)
  if (!domain) throw new CheckFailed(`${delegationManager} does not answer eip712Domain(): it is not MetaMask's DelegationManager`)
  const [, name, version, domainChainId, verifyingContract] = domain
  if (name !== 'DelegationManager' || version !== '1' || domainChainId !== BigInt(chainId) || getAddress(verifyingContract) !== delegationManager) {
    throw new CheckFailed(`${delegationManager}'s EIP-712 domain is "${name}" version "${version}" on chain ${domainChainId} at ${verifyingContract}, not DelegationManager 1 on ${chainId} at itself`)
  }
  const managers = await Promise.all([
    client.readContract({ address: delegator, abi: delegatorAbi, functionName: 'delegationManager' }).catch(notAnswered),
    client.readContract({ address: logicalOrWrapper, abi: logicalOrWrapperAbi, functionName: 'delegationManager' }).catch(notAnswered),
  ])
  for (const [index, manager] of managers.entries()) {
    const which = index === 0 ? `the delegator ${delegator}` : `the LogicalOrWrapperEnforcer ${logicalOrWrapper}`
    if (!manager || getAddress(manager) !== delegationManager) throw new CheckFailed(`${which} names ${manager ?? 'no'} DelegationManager, not ${delegationManager}`)
  }
  return `DelegationManager 1 at ${delegationManager} (chain id ${chainId}); the delegator ${delegator} and the enforcers a payment-first delegation uses`
}
