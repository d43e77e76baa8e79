import { createRequire } from 'node:module'
import { createPublicClient, createWalletClient, getAddress, http, type Abi, type Address, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { deployCodeTo, type DevnetDeployment } from 'bruno/plugin'
import { ENTRY_POINT } from './entryPoint.ts'
import { RUNNER_GATE_CREATION, runnerGateAbi } from './runnerGate.ts'

/**
 * The group's `devnet` hook: EntryPoint v0.8 built at its address (deployCodeTo: its constructor
 * runs there, so its EIP-712 domain names it), a `Simple7702Account`, from
 * `@account-abstraction/contracts` 0.8.0's artifacts, and a `RunnerGate` for the devnet's Runner;
 * the account implementation and the gate are the group's options.
 *
 * @example
 * await deploySimple7702(deployment) // { implementation: '0x…', gate: '0x…' }
 */
export async function deploySimple7702(deployment: DevnetDeployment): Promise<{ implementation: Address; gate: Address }> {
  const require = createRequire(import.meta.url)
  const entryPoint = require('@account-abstraction/contracts/artifacts/EntryPoint.json') as { abi: Abi; bytecode: Hex }
  const account = require('@account-abstraction/contracts/artifacts/Simple7702Account.json') as { abi: Abi; bytecode: Hex }
  await deployCodeTo(deployment.rpcUrl, deployment.deployer.privateKey, { abi: entryPoint.abi, bytecode: entryPoint.bytecode }, ENTRY_POINT)
  const transport = http(deployment.rpcUrl)
  const wallet = createWalletClient({ account: privateKeyToAccount(deployment.deployer.privateKey), transport })
  const client = createPublicClient({ transport })
  const deployed = async (name: string, hash: Hex) => {
    const receipt = await client.waitForTransactionReceipt({ hash })
    if (!receipt.contractAddress) throw new Error(`${name} was not deployed (${hash})`)
    return getAddress(receipt.contractAddress)
  }
  const implementation = await deployed('Simple7702Account', await wallet.deployContract({ abi: account.abi, bytecode: account.bytecode, chain: null }))
  const gate = await deployed(
    'RunnerGate',
    await wallet.deployContract({ abi: runnerGateAbi, bytecode: RUNNER_GATE_CREATION, args: [ENTRY_POINT, deployment.runner.contract], chain: null }),
  )
  return { implementation, gate }
}
