import { createPublicClient, createWalletClient, http, keccak256, type Address } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { devnetChain } from './chain.ts'
import { runnerAbi } from '../../contracts/abi.ts'
import { delegationCode } from '../relay/delegation7702.ts'
import type { DevnetDeployment } from './deploy.ts'

/**
 * Lists the accounts delegated (EIP-7702) to `delegate` as payers the devnet's Runner takes by
 * signed transfer: its owner, the deployer, allows their code `0xef0100 ‖ delegate`
 * (`setPayerCode`). A delegate group calls it from its devnet hook for a delegate whose ERC-1271
 * answer only the account's own key can change.
 *
 * @example
 * await allowDelegatedPayers(deployment, CALIBUR_ADDRESS) // Calibur-delegated accounts pay by signed transfer on the devnet
 */
export async function allowDelegatedPayers(deployment: DevnetDeployment, delegate: Address): Promise<void> {
  const transport = http(deployment.rpcUrl)
  const chain = devnetChain(deployment.chainId)
  const owner = createWalletClient({ account: privateKeyToAccount(deployment.deployer.privateKey), chain, transport })
  const hash = await owner.writeContract({ address: deployment.runner.contract, abi: runnerAbi, functionName: 'setPayerCode', args: [keccak256(delegationCode(delegate)), true] })
  const receipt = await createPublicClient({ chain, transport, pollingInterval: 50 }).waitForTransactionReceipt({ hash })
  if (receipt.status !== 'success') throw new Error(`allowDelegatedPayers: setPayerCode for ${delegate} reverted (${hash})`)
}
