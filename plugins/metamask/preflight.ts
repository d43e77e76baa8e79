import { getAddress } from 'viem'
import { CheckFailed, notAnswered, type Network } from '../../core/plugin.ts'
import { paymentFirstEnforcerArtifact } from '../../contracts/artifacts.ts'
import { delegationManagerAbi, delegatorAbi } from './abi.ts'
import { metaMaskContracts, paymentFirstEnforcer } from './contracts.ts'

/**
 * The metamask group's preflight check: MetaMask's delegation framework v1.3.0 where this group
 * expects it, recognised by what it answers — the DelegationManager's EIP-712 domain
 * (`DelegationManager` version `1`, this chain, its own address: what the account signs) and the
 * delegator naming that manager; and Bruno's PaymentFirstEnforcer at its address, its code the
 * committed artifact's.
 *
 * @example
 * await checkMetaMask(networks.get('base')) // 'DelegationManager v1 at 0xdb9B…7dB3 (chain id 8453), its delegator and enforcers'
 */
export async function checkMetaMask(network: Network): Promise<string> {
  const { client } = network
  const { chainId } = network.config
  const { delegationManager, delegator } = metaMaskContracts
  const [managerCode, delegatorCode, enforcerCode] = await Promise.all([delegationManager, delegator, paymentFirstEnforcer].map((address) => client.getCode({ address })))
  const hasCode = (code: string | undefined) => code !== undefined && code !== '0x'
  const missing = [
    ...(hasCode(managerCode) ? [] : [`delegationManager ${delegationManager}`]),
    ...(hasCode(delegatorCode) ? [] : [`delegator ${delegator}`]),
  ]
  if (missing.length > 0) throw new CheckFailed(`no code at ${missing.join(', ')}: MetaMask's delegation framework v1.3.0 is not deployed on this chain`)
  if (enforcerCode !== paymentFirstEnforcerArtifact.deployedBytecode) {
    const found = hasCode(enforcerCode) ? `the code at ${paymentFirstEnforcer} is not` : `no code at ${paymentFirstEnforcer} where it belongs:`
    throw new CheckFailed(`${found} Bruno's PaymentFirstEnforcer, the caveat of every payment-first delegation: deploy it with bruno deploy --metamask`)
  }
  const domain = await client.readContract({ address: delegationManager, abi: delegationManagerAbi, functionName: 'eip712Domain' }).catch(notAnswered)
  if (!domain) throw new CheckFailed(`${delegationManager} does not answer eip712Domain(): it is not MetaMask's DelegationManager`)
  const [, name, version, domainChainId, verifyingContract] = domain
  if (name !== 'DelegationManager' || version !== '1' || domainChainId !== BigInt(chainId) || getAddress(verifyingContract) !== delegationManager) {
    throw new CheckFailed(`${delegationManager}'s EIP-712 domain is "${name}" version "${version}" on chain ${domainChainId} at ${verifyingContract}, not DelegationManager 1 on ${chainId} at itself`)
  }
  const manager = await client.readContract({ address: delegator, abi: delegatorAbi, functionName: 'delegationManager' }).catch(notAnswered)
  if (!manager || getAddress(manager) !== delegationManager) throw new CheckFailed(`the delegator ${delegator} names ${manager ?? 'no'} DelegationManager, not ${delegationManager}`)
  return `DelegationManager 1 at ${delegationManager} (chain id ${chainId}); the delegator ${delegator} and Bruno's PaymentFirstEnforcer ${paymentFirstEnforcer}`
}
