import { type Address, createPublicClient, createTestClient, createWalletClient, http, parseAbi } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { devnetChain } from './chain.ts'
import type { DevnetDeployment } from './deploy.ts'

// FiatToken's mint, by its minter (the devnet's deployer). Declared here, not read from the token's
// artifact, so `bruno/devnet` loads where only the chain's packages are missing.
const mintAbi = parseAbi(['function mint(address _to, uint256 _amount) returns (bool)'])

/**
 * Mints devnet USDC (6 decimals) to `to`, signed by the deployer (the token's minter), and
 * waits for it to be mined.
 *
 * @example
 * await mintUsdc(devnet.rpcUrl, devnet, '0x7099…79C8', 250_000000n) // 250 USDC
 */
export async function mintUsdc(
  rpcUrl: string,
  deployment: DevnetDeployment,
  to: Address,
  amount: bigint,
): Promise<void> {
  const chain = devnetChain(deployment.chainId)
  const transport = http(rpcUrl)
  const wallet = createWalletClient({ account: privateKeyToAccount(deployment.deployer.privateKey), chain, transport })
  const hash = await wallet.writeContract({
    address: deployment.usdc,
    abi: mintAbi,
    functionName: 'mint',
    args: [to, amount],
  })
  const client = createPublicClient({ chain, transport, pollingInterval: 50 })
  const receipt = await client.waitForTransactionReceipt({ hash })
  if (receipt.status !== 'success') throw new Error(`mintUsdc: mint reverted (${hash})`)
}

/**
 * Sets an account's ETH balance outright (`anvil_setBalance`), e.g. to leave a test account
 * with none at all.
 *
 * @example
 * await setEthBalance(devnet.rpcUrl, '0x7099…79C8', 0n)
 */
export async function setEthBalance(rpcUrl: string, address: Address, wei: bigint): Promise<void> {
  await createTestClient({ mode: 'anvil', transport: http(rpcUrl) }).setBalance({ address, value: wei })
}
