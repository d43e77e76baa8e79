import { createRequire } from 'node:module'
import { createPublicClient, createWalletClient, getAddress, http, type Abi, type Address, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { deployCodeTo, type DevnetDeployment } from 'bruno/plugin'
import { ENTRY_POINT } from './entryPoint.ts'

/**
 * The group's `devnet` hook: EntryPoint v0.8 built at its address (deployCodeTo: its constructor
 * runs there, so its EIP-712 domain names it) and a `Simple7702Account`, from
 * `@account-abstraction/contracts` 0.8.0's artifacts; the account implementation is the group's option.
 *
 * @example
 * await deploySimple7702(deployment) // { implementation: '0x…' }
 */
export async function deploySimple7702(deployment: DevnetDeployment): Promise<{ implementation: Address }> {
  const require = createRequire(import.meta.url)
  const entryPoint = require('@account-abstraction/contracts/artifacts/EntryPoint.json') as { abi: Abi; bytecode: Hex }
  const account = require('@account-abstraction/contracts/artifacts/Simple7702Account.json') as { abi: Abi; bytecode: Hex }
  await deployCodeTo(deployment.rpcUrl, deployment.deployer.privateKey, { abi: entryPoint.abi, bytecode: entryPoint.bytecode }, ENTRY_POINT)
  const transport = http(deployment.rpcUrl)
  const wallet = createWalletClient({ account: privateKeyToAccount(deployment.deployer.privateKey), transport })
  const hash = await wallet.deployContract({ abi: account.abi, bytecode: account.bytecode, chain: null })
  const receipt = await createPublicClient({ transport }).waitForTransactionReceipt({ hash })
  if (!receipt.contractAddress) throw new Error(`Simple7702Account was not deployed (${hash})`)
  return { implementation: getAddress(receipt.contractAddress) }
}
