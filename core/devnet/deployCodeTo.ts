import { createPublicClient, createTestClient, createWalletClient, encodeDeployData, getAddress, http, type Abi, type Address, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { devnetChain } from './chain.ts'

/**
 * Builds a contract at a given address on an anvil chain, as foundry's `deployCodeTo` does: the
 * creation code (constructor arguments appended) is set as the address's code and called by
 * `deployerKey`'s account, so the constructor runs with address(this) = that address, writes its
 * storage there and returns the runtime code with its immutables filled in; then that runtime code
 * replaces the creation code. Runtime code copied from elsewhere would lose the constructor's
 * storage and carry the wrong address(this) (Uniswap's NoDelegateCall and OpenZeppelin's EIP-712
 * cache compare it with an immutable). The address must hold no code yet.
 *
 * @example
 * await deployCodeTo(devnet.rpcUrl, devnet.deployer.privateKey, { abi, bytecode, args: [owner] }, '0xdb9B1e94B5b69Df7e401DDbedE43491141047dB3')
 */
export async function deployCodeTo(
  rpcUrl: string,
  deployerKey: Hex,
  contract: { readonly abi: Abi; readonly bytecode: Hex; readonly args?: readonly unknown[] },
  at: Address,
): Promise<Address> {
  const transport = http(rpcUrl)
  const client = createPublicClient({ transport, pollingInterval: 50 })
  const chain = devnetChain(await client.getChainId())
  const testClient = createTestClient({ mode: 'anvil', chain, transport })
  const deployer = privateKeyToAccount(deployerKey)
  const wallet = createWalletClient({ account: deployer, chain, transport })
  const address = getAddress(at)
  const existing = await client.getCode({ address })
  if (existing && existing !== '0x') throw new Error(`deployCodeTo: ${address} already holds code`)
  await testClient.setCode({ address, bytecode: encodeDeployData({ abi: contract.abi, bytecode: contract.bytecode, args: contract.args ?? [] } as Parameters<typeof encodeDeployData>[0]) })
  const { data: runtime } = await client.call({ account: deployer, to: address })
  if (!runtime || runtime === '0x') throw new Error(`deployCodeTo: the constructor returned no code at ${address}`)
  const gas = ((await client.estimateGas({ account: deployer, to: address })) * 5n) / 4n
  const receipt = await client.waitForTransactionReceipt({ hash: await wallet.sendTransaction({ to: address, gas }) })
  if (receipt.status !== 'success') throw new Error(`deployCodeTo: the constructor at ${address} reverted (${receipt.transactionHash})`)
  await testClient.setCode({ address, bytecode: runtime })
  return address
}
