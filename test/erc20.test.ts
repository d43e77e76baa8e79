import { readFileSync } from 'node:fs'
import t from 'tap'
import {
  createPublicClient,
  createWalletClient,
  erc20Abi,
  getAddress,
  http,
  maxUint256,
  parseEther,
  type Address,
  type Hex,
  type TransactionReceipt,
} from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { devnetChain } from '../core/devnet/chain.ts'
import { weth9Artifact } from '../core/devnet/artifacts.ts'
import type { Call } from '../core/tool/schemas.ts'
import { startDevnetBruno } from './fixtures/devnetBruno.ts'
import { RawMcpClient } from './fixtures/mcpHttp.ts'

// Each helper's calls are sent by the account itself, as its wallet would, and the chain must show
// their effect. viem's own ERC-20 ABI reads the results, not the ABI the helpers encode with.

const devnet = await startDevnetBruno(t)
const { deployment } = devnet
const mcp = new RawMcpClient(devnet.mcpUrl)
const chain = devnetChain(deployment.chainId)
const client = createPublicClient({ chain, transport: http(deployment.rpcUrl), pollingInterval: 50 })

const wallets = deployment.demoAccounts.map(({ privateKey }) =>
  createWalletClient({ account: privateKeyToAccount(privateKey), chain, transport: http(deployment.rpcUrl) }),
)
type Wallet = (typeof wallets)[number]
const [alice, bob] = wallets
if (!alice || !bob) throw new Error('the devnet has fewer than 2 demo accounts')

/** Sends calls from the wallet's account, one transaction each, and returns their receipts. */
async function send(wallet: Wallet, calls: readonly Call[]): Promise<TransactionReceipt[]> {
  const receipts: TransactionReceipt[] = []
  for (const call of calls) {
    const hash = await wallet.sendTransaction({ to: call.to as Address, value: BigInt(call.value), data: call.data as Hex })
    const receipt = await client.waitForTransactionReceipt({ hash })
    if (receipt.status !== 'success') throw new Error(`call to ${call.to} reverted`)
    receipts.push(receipt)
  }
  return receipts
}

const gasPaid = (receipts: readonly TransactionReceipt[]) => receipts.reduce((sum, r) => sum + r.gasUsed * r.effectiveGasPrice, 0n)
const allowance = (token: Address, owner: Address, spender: Address) =>
  client.readContract({ address: token, abi: erc20Abi, functionName: 'allowance', args: [owner, spender] })
const balance = (token: Address, owner: Address) => client.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [owner] })

t.test('erc20_approve: the account\'s allowance becomes the amount, then max, then 0', async (t) => {
  const spender = bob.account.address
  const result = await mcp.call('erc20_approve', { chain: 'local', token: 'usdc', spender, amount: '12.5' })
  t.same(result.token, { address: deployment.usdc, symbol: 'USDC', decimals: 6 })
  t.equal(result.amount, '12.5')
  t.equal(result.amountBaseUnits, '12500000')
  t.equal(result.calls.length, 1)
  await send(alice, result.calls)
  t.equal(await allowance(deployment.usdc, alice.account.address, spender), 12_500_000n)

  const max = await mcp.call('erc20_approve', { chain: 'local', token: 'USDC', spender, amount: 'max' })
  t.equal(max.amount, 'max')
  t.equal(max.amountBaseUnits, maxUint256.toString())
  await send(alice, max.calls)
  t.equal(await allowance(deployment.usdc, alice.account.address, spender), maxUint256)

  const revoke = await mcp.call('erc20_approve', { chain: 'local', token: 'USDC', spender, amount: '0' })
  await send(alice, revoke.calls)
  t.equal(await allowance(deployment.usdc, alice.account.address, spender), 0n)
})

t.test('erc20_approve on a token the config does not list reads its decimals from the chain', async (t) => {
  const deployer = createWalletClient({ account: privateKeyToAccount(deployment.deployer.privateKey), chain, transport: http(deployment.rpcUrl) })
  const receipt = await client.waitForTransactionReceipt({ hash: await deployer.deployContract({ ...weth9Artifact }) })
  const token = getAddress(receipt.contractAddress!)
  const spender = bob.account.address
  const result = await mcp.call('erc20_approve', { chain: 'local', token: token.toLowerCase(), spender, amount: '1.5' })
  t.same(result.token, { address: token, decimals: 18 }, 'no symbol: it is not configured')
  t.equal(result.amountBaseUnits, parseEther('1.5').toString())
  await send(alice, result.calls)
  t.equal(await allowance(token, alice.account.address, spender), parseEther('1.5'))
})

t.test('erc20_transfer moves the balance from the account', async (t) => {
  const [fromBefore, toBefore] = await Promise.all([balance(deployment.usdc, alice.account.address), balance(deployment.usdc, bob.account.address)])
  const result = await mcp.call('erc20_transfer', { chain: 'local', token: deployment.usdc, to: bob.account.address, amount: '250.75' })
  t.equal(result.amount, '250.75')
  t.equal(result.amountBaseUnits, '250750000')
  t.equal(result.to, bob.account.address)
  await send(alice, result.calls)
  t.equal(await balance(deployment.usdc, alice.account.address), fromBefore - 250_750_000n)
  t.equal(await balance(deployment.usdc, bob.account.address), toBefore + 250_750_000n)
})

t.test('weth_unwrap: the account\'s WETH goes down and its ETH up by the amount, gas aside', async (t) => {
  const account = alice.account.address
  // WETH9's fallback wraps what it receives.
  await send(alice, [{ to: deployment.weth, value: parseEther('1').toString(), data: '0x' }])
  const [wethBefore, ethBefore] = await Promise.all([balance(deployment.weth, account), client.getBalance({ address: account })])
  const result = await mcp.call('weth_unwrap', { chain: 'local', amount: '0.4' })
  t.same(result, { calls: result.calls, weth: deployment.weth, amount: '0.4', amountWei: parseEther('0.4').toString() })
  const receipts = await send(alice, result.calls)
  t.equal(await balance(deployment.weth, account), wethBefore - parseEther('0.4'))
  t.equal(await client.getBalance({ address: account }), ethBefore + parseEther('0.4') - gasPaid(receipts))
})

t.test('the tools\' calls equal the golden vectors for the devnet', async (t) => {
  const golden = JSON.parse(readFileSync(new URL('../golden/erc20.json', import.meta.url), 'utf8')) as {
    vectors: { name: string; input: Record<string, string>; calls: Call[] }[]
  }
  const vector = (name: string) => {
    const found = golden.vectors.find((candidate) => candidate.name === name)
    if (!found) throw new Error(`golden/erc20.json has no vector "${name}"`)
    return found
  }
  const approve = vector('devnet: approve 12.5 USDC to SwapRouter02')
  t.equal(approve.input.token, deployment.usdc, 'the devnet deploy still puts USDC where the golden vectors say')
  t.equal(approve.input.spender, deployment.uniswap.swapRouter02)
  const approved = await mcp.call('erc20_approve', { chain: 'local', token: 'USDC', spender: deployment.uniswap.swapRouter02, amount: '12.5' })
  t.same(approved.calls, approve.calls)

  const transfer = vector('devnet: transfer 250.75 USDC')
  const transferred = await mcp.call('erc20_transfer', { chain: 'local', token: 'USDC', to: transfer.input.to, amount: '250.75' })
  t.same(transferred.calls, transfer.calls)

  const unwrap = vector('devnet: unwrap 0.4 WETH')
  t.equal(unwrap.input.weth, deployment.weth)
  const unwrapped = await mcp.call('weth_unwrap', { chain: 'local', amount: '0.4' })
  t.same(unwrapped.calls, unwrap.calls)
})

t.test('refusals are tool errors that name the problem', async (t) => {
  const spender = bob.account.address
  const refused = async (name: string, args: Record<string, unknown>, pattern: RegExp) => {
    const result = await mcp.callTool(name, args)
    t.equal(result.isError, true, `${name} ${JSON.stringify(args)} is refused`)
    t.equal(result.structuredContent, undefined)
    t.match(result.content[0].text, pattern)
  }
  await refused('erc20_approve', { chain: 'local', token: 'DOGE', spender, amount: '1' }, /unknown token "DOGE" on local.*USDC, WETH/)
  await refused('erc20_transfer', { chain: 'local', token: 'USDC', to: spender, amount: '1.1234567' }, /has 7 decimals; USDC has 6/)
  await refused('weth_unwrap', { chain: 'local', amount: '0.0000000000000000001' }, /has 19 decimals; WETH has 18/)
  await refused('erc20_approve', { chain: 'mainnet', token: 'USDC', spender, amount: '1' }, /Invalid arguments for erc20_approve: \/chain/)
  await refused('erc20_approve', { chain: 'local', token: alice.account.address, spender, amount: '1' }, /is not an ERC-20 token/)
  await refused('erc20_approve', { chain: 'local', token: deployment.uniswap.factory, spender, amount: '1' }, /is not an ERC-20 token/)
  await refused('erc20_approve', { chain: 'local', token: 'USDC', spender: '0x0000000000000000000000000000000000000000', amount: '1' }, /spender is the zero address/)
  await refused('erc20_transfer', { chain: 'local', token: 'USDC', to: spender, amount: '0' }, /amount is 0/)
  await refused('erc20_transfer', { chain: 'local', token: 'USDC', to: spender.replace('C', 'c'), amount: '1' }, /EIP-55 checksum/)
  await refused('weth_unwrap', { chain: 'local', amount: '0.0' }, /amount is 0/)
  await refused('erc20_transfer', { chain: 'local', token: 'USDC', to: spender, amount: '1', extra: true }, /Invalid arguments/)
})

t.test('every structured result was checked against its outputSchema', async (t) => {
  t.ok(mcp.validated >= 9, `${mcp.validated} results validated`)
})
