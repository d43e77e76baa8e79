import type { Abi, Hex } from 'viem'
import { deployCodeTo, type DevnetDeployment } from '../../core/plugin.ts'
import { paymentFirstEnforcerArtifact } from '../../contracts/artifacts.ts'
import { delegatorEntryPoint, metaMaskContracts, paymentFirstEnforcer } from './contracts.ts'

/**
 * Builds MetaMask's delegation framework v1.3.0 on the devnet, from `@metamask/delegation-abis`'
 * creation code, at the addresses it has on every chain MetaMask deployed it to: the
 * DelegationManager (owned by the devnet's deployer) and the EIP-7702 delegator; and Bruno's own
 * PaymentFirstEnforcer at its deterministic address. Each constructor runs at its address, so the
 * immutables (the manager's EIP-712 domain, the delegator's manager) are what they are on chain.
 *
 * @example
 * await deployMetaMaskDelegator(devnet) // the delegator at 0x63c0…E32B, its manager at 0xdb9B…7dB3
 */
export async function deployMetaMaskDelegator(deployment: DevnetDeployment): Promise<void> {
  const [abis, bytecode] = await Promise.all([import('@metamask/delegation-abis'), import('@metamask/delegation-abis/bytecode')])
  const { rpcUrl, deployer } = deployment
  const build = (abi: Abi, code: string, args: readonly unknown[], at: Hex) => deployCodeTo(rpcUrl, deployer.privateKey, { abi, bytecode: code as Hex, args }, at)
  const manager = metaMaskContracts.delegationManager
  await build(abis.DelegationManager as Abi, bytecode.DelegationManager, [deployer.address], manager)
  await build(abis.EIP7702StatelessDeleGator as Abi, bytecode.EIP7702StatelessDeleGator, [manager, delegatorEntryPoint], metaMaskContracts.delegator)
  await build(paymentFirstEnforcerArtifact.abi, paymentFirstEnforcerArtifact.bytecode, [], paymentFirstEnforcer)
}
