import { createWalletClient, http, type Address } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { waitForTransactionReceipt } from 'viem/actions'
import type { DevnetDeployment } from 'bruno/plugin'

/** Guestbook.sol (beside this file) as solc 0.8.37 builds it (optimizer on, 200 runs, EVM cancun): its creation code. */
const GUESTBOOK_CREATION = '0x6080604052348015600e575f5ffd5b5061015b8061001c5f395ff3fe608060405234801561000f575f5ffd5b5060043610610029575f3560e01c806379d6348d1461002d575b5f5ffd5b61004061003b366004610089565b610042565b005b336001600160a01b03167fc1fd59151623264943a9bf66321cf490ff1fae40a4d2c0dc7f1953c674a59b39838360405161007d9291906100f7565b60405180910390a25050565b5f5f6020838503121561009a575f5ffd5b823567ffffffffffffffff8111156100b0575f5ffd5b8301601f810185136100c0575f5ffd5b803567ffffffffffffffff8111156100d6575f5ffd5b8560208284010111156100e7575f5ffd5b6020919091019590945092505050565b60208152816020820152818360408301375f818301604090810191909152601f909201601f1916010191905056fea2646970667358221220a87243ce9fe2a92b71ac579274a054575dc91125997e2d7e311555192a76897c64736f6c63430008250033' as const

const guestbookDeployAbi = [{ type: 'constructor', inputs: [], stateMutability: 'nonpayable' }] as const

/**
 * The group's `devnet` hook: deploys a guestbook on the devnet's fresh chain, from the deployer's
 * key, and answers the options that serve the group there.
 *
 * @example
 * // npm start -- --plugin ./examples/hello-group
 * await deployGuestbook(deployment) // { guestbook: '0x…' }
 */
export async function deployGuestbook(deployment: DevnetDeployment): Promise<{ guestbook: Address }> {
  const account = privateKeyToAccount(deployment.deployer.privateKey)
  const wallet = createWalletClient({ account, transport: http(deployment.rpcUrl) })
  const hash = await wallet.deployContract({ abi: guestbookDeployAbi, bytecode: GUESTBOOK_CREATION, chain: null })
  const receipt = await waitForTransactionReceipt(wallet, { hash })
  if (!receipt.contractAddress) throw new Error(`the guestbook was not deployed (transaction ${hash})`)
  return { guestbook: receipt.contractAddress }
}
