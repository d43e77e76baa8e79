import { createPublicClient, createTestClient, encodeDeployData, http } from 'viem'
import { caliburCompatibleArtifact } from '../../contracts/artifacts.ts'
import type { DevnetDeployment } from '../../core/plugin.ts'
import { CALIBUR_ADDRESS } from './networkOptions.ts'

/**
 * Places the devnet's Calibur stand-in (contracts/CaliburCompatible.sol) at Calibur's address, so
 * that its EIP-712 salt is Calibur's and the group's default address finds it. The constructor
 * takes that address for the salt; run in an `eth_call`, the creation code returns the runtime code
 * with the immutable filled in — no transaction, so no account's nonce moves — and `anvil_setCode`
 * places it.
 *
 * @example
 * await placeCaliburStandIn(deployment) // code at 0x0000…030e
 */
export async function placeCaliburStandIn(deployment: DevnetDeployment): Promise<void> {
  const transport = http(deployment.rpcUrl)
  const { data: runtime } = await createPublicClient({ transport }).call({
    data: encodeDeployData({ ...caliburCompatibleArtifact, args: [CALIBUR_ADDRESS] }),
  })
  if (!runtime) throw new Error('placeCaliburStandIn: CaliburCompatible\'s constructor returned no code')
  await createTestClient({ mode: 'anvil', transport }).setCode({ address: CALIBUR_ADDRESS, bytecode: runtime })
}
