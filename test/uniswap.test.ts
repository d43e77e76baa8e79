import { readFileSync } from 'node:fs'
import t from 'tap'
import {
  createPublicClient,
  createWalletClient,
  erc20Abi,
  formatEther,
  http,
  type Abi,
  type Address,
  type Hex,
  type TransactionReceipt,
} from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { devnetChain } from '../core/devnet/chain.ts'
import { uniswapV3PoolArtifact } from '../core/devnet/artifacts.ts'
import type { Call } from '../core/tool/schemas.ts'
import { pathPrice } from '../core/chain/tokenPrice.ts'
import { formatFraction, spotPrices } from '../plugins/uniswap/price.ts'
import { startDevnetBruno } from './fixtures/devnetBruno.ts'
import { RawMcpClient } from './fixtures/mcpHttp.ts'

// The account sends the swap's calls itself; the chain must pay it at least the floor. The price
// is checked against the pool's slot0 read here with the pool's published ABI, by other arithmetic.

const devnet = await startDevnetBruno(t)
const { deployment, config } = devnet
const mcp = new RawMcpClient(devnet.mcpUrl)
const chain = devnetChain(deployment.chainId)
const client = createPublicClient({ chain, transport: http(deployment.rpcUrl), pollingInterval: 50 })
const wallets = deployment.demoAccounts.map(({ privateKey }) =>
  createWalletClient({ account: privateKeyToAccount(privateKey), chain, transport: http(deployment.rpcUrl) }),
)
type Wallet = (typeof wallets)[number]
const [alice, bob, carol] = wallets
if (!alice || !bob || !carol) throw new Error('the devnet has fewer than 3 demo accounts')
const router = deployment.uniswap.swapRouter02
const pool = deployment.uniswap.usdcWethPool

async function send(wallet: Wallet, calls: readonly Call[]): Promise<TransactionReceipt[]> {
  const receipts: TransactionReceipt[] = []
  for (const call of calls) {
    const request = { account: wallet.account, to: call.to as Address, value: BigInt(call.value), data: call.data as Hex }
    // A swap's gas is estimated in one second and may be mined in the next, where the pool writes an oracle
    // observation it did not write in the estimate (a loaded machine makes that likely): a quarter more covers it.
    const gas = ((await client.estimateGas(request)) * 5n) / 4n
    const hash = await wallet.sendTransaction({ ...request, gas })
    const receipt = await client.waitForTransactionReceipt({ hash })
    if (receipt.status !== 'success') throw new Error(`call to ${call.to} reverted`)
    receipts.push(receipt)
  }
  return receipts
}
const gasPaid = (receipts: readonly TransactionReceipt[]) => receipts.reduce((sum, r) => sum + r.gasUsed * r.effectiveGasPrice, 0n)
const balance = (token: Address, owner: Address) => client.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [owner] })
const poolAbi = uniswapV3PoolArtifact.abi as Abi

// The price test runs first, on the pool as deployed, and reads slot0 at the block the tool names.
t.test('uniswap_price agrees with the pool\'s slot0', async (t) => {
  const result = await mcp.call('uniswap_price', { chain: 'local', token: 'USDC' })
  t.same(result.token, { address: deployment.usdc, symbol: 'USDC', decimals: 6 })
  t.equal(result.weth, deployment.weth)
  t.equal(result.path.route, 'USDC -(0.05%)-> WETH')
  t.equal(result.pools.length, 1)
  const [reported] = result.pools
  t.equal(reported.address, pool)
  t.equal(reported.fee, 500)

  const blockNumber = BigInt(result.blockNumber)
  const read = (functionName: string) => client.readContract({ address: pool, abi: poolAbi, functionName, blockNumber })
  const [slot0, liquidity, token0] = (await Promise.all([read('slot0'), read('liquidity'), read('token0')])) as [[bigint, number], bigint, Address]
  const [sqrtP, tick] = slot0
  t.equal(reported.sqrtPriceX96, sqrtP.toString())
  t.equal(reported.tick, tick)
  t.equal(reported.liquidity, liquidity.toString())
  t.equal(reported.token0, token0)

  // With p = sqrtP²/2¹⁹² (token1 base units per token0 base unit), each integer the tool reports
  // must be the floor of its exact value: check x ≤ value < x + 1 by cross-multiplying.
  const usdcIsToken0 = token0 === deployment.usdc
  const sq = sqrtP * sqrtP
  const q192 = 2n ** 192n
  const wei = BigInt(result.raw.weiPerToken) // ⌊10⁶ · WETH wei per USDC base unit⌋
  const units = BigInt(result.raw.baseUnitsPerEth) // ⌊10¹⁸ · USDC base units per wei⌋
  // WETH wei per USDC base unit = p if USDC is token0, else 1/p.
  const [weiNum, weiDen] = usdcIsToken0 ? [sq, q192] : [q192, sq]
  t.ok(wei * weiDen <= 10n ** 6n * weiNum && 10n ** 6n * weiNum < (wei + 1n) * weiDen, 'weiPerToken is ⌊10⁶ wei-per-unit⌋')
  t.ok(units * weiNum <= 10n ** 18n * weiDen && 10n ** 18n * weiDen < (units + 1n) * weiNum, 'baseUnitsPerEth is ⌊10¹⁸ units-per-wei⌋')

  // The tick (⌊log₁.₀₀₀₁ p⌋) gives the same price within one tick, by floating point.
  const priceFromTick = 1.0001 ** tick * (usdcIsToken0 ? 1e-18 / 1e-6 : 1e-6 / 1e-18) // token1 per token0, whole units
  const tokenPerEth = usdcIsToken0 ? 1 / priceFromTick : priceFromTick
  t.ok(Math.abs(Number(result.tokenPerEth) / tokenPerEth - 1) < 1.0001e-4, `tokenPerEth ${result.tokenPerEth} ≈ ${tokenPerEth} from the tick`)
  t.ok(Math.abs(Number(result.tokenPerEth) / 3000 - 1) < 1e-6, 'the devnet pool opened at 3000 USDC per ETH')
  t.ok(Math.abs(Number(result.ethPerToken) * Number(result.tokenPerEth) - 1) < 1e-12, 'the two directions are inverses')
  t.equal(result.ethPerToken.replace(/^0\.0*/, '').length, 18, '18 significant digits')
})

t.test('uniswap_swap_to_eth: approve, swap, and the account holds at least minimumOut more ETH', async (t) => {
  const account = alice.account.address
  const swap = await mcp.call('uniswap_swap_to_eth', { chain: 'local', token: 'USDC', amount: '100', recipient: account })
  t.same(swap.token, { address: deployment.usdc, symbol: 'USDC', decimals: 6 })
  t.equal(swap.amount, '100')
  t.equal(swap.amountBaseUnits, '100000000')
  t.equal(swap.recipient, account)
  t.equal(swap.slippageBps, config.networks[0]!.margins.defaultSlippageBps, 'the configured default slippage')
  t.same(swap.approvals, [{ token: deployment.usdc, spender: router, amountBaseUnits: '100000000' }])
  const expectedOut = BigInt(swap.expectedOut.wei)
  const minimumOut = BigInt(swap.minimumOut.wei)
  t.equal(minimumOut, (expectedOut * BigInt(10_000 - swap.slippageBps)) / 10_000n)
  t.equal(swap.expectedOut.eth, formatEther(expectedOut))
  t.ok(Math.abs(Number(swap.expectedOut.eth) / (100 / 3000) - 1) < 0.01, `${swap.expectedOut.eth} ETH for 100 USDC at ~3000 (fee and impact < 1%)`)

  const golden = JSON.parse(readFileSync(new URL('../golden/uniswap.json', import.meta.url), 'utf8')) as { vectors: { name: string; path: Hex }[] }
  t.equal(swap.path.encoded, golden.vectors.find((vector) => vector.name.startsWith('devnet:'))?.path, 'the path of the golden devnet vector')

  const [approval] = swap.approvals
  const approve = await mcp.call('erc20_approve', { chain: 'local', token: approval.token, spender: approval.spender, amount: swap.amount })
  const [ethBefore, usdcBefore] = await Promise.all([client.getBalance({ address: account }), balance(deployment.usdc, account)])
  const receipts = await send(alice, [...approve.calls, ...swap.calls])
  const [ethAfter, usdcAfter] = await Promise.all([client.getBalance({ address: account }), balance(deployment.usdc, account)])
  const received = ethAfter - ethBefore + gasPaid(receipts)
  t.ok(received >= minimumOut, `received ${received} wei ≥ minimumOut ${minimumOut}`)
  t.equal(received, expectedOut, 'nothing moved the pool between quote and swap: exactly the quote')
  t.equal(usdcAfter, usdcBefore - 100_000_000n)
  t.equal(await balance(deployment.weth, router), 0n, 'the router keeps no WETH')
  t.equal(await client.getBalance({ address: router }), 0n, 'the router keeps no ETH')
})

t.test('the floor holds: once the price drops below it, the swap reverts', async (t) => {
  const account = bob.account.address
  const swap = await mcp.call('uniswap_swap_to_eth', { chain: 'local', token: 'usdc', amount: '50', recipient: account, slippageBps: 10 })
  t.equal(swap.slippageBps, 10)
  t.equal(BigInt(swap.minimumOut.wei), (BigInt(swap.expectedOut.wei) * 9_990n) / 10_000n)
  const approve = await mcp.call('erc20_approve', { chain: 'local', token: 'USDC', spender: router, amount: 'max' })
  await send(bob, approve.calls)
  const call = { account, to: swap.calls[0].to as Address, data: swap.calls[0].data as Hex }
  await client.call(call) // succeeds now

  // Carol sells 5,000 USDC first: USDC buys markedly less ETH afterwards.
  const dump = await mcp.call('uniswap_swap_to_eth', { chain: 'local', token: 'USDC', amount: '5000', recipient: carol.account.address })
  const dumpApprove = await mcp.call('erc20_approve', { chain: 'local', token: 'USDC', spender: router, amount: '5000' })
  await send(carol, [...dumpApprove.calls, ...dump.calls])
  await t.rejects(client.call(call), /Insufficient WETH9/, 'the unwrap\'s floor reverts the whole multicall')
  const requote = await mcp.call('uniswap_swap_to_eth', { chain: 'local', token: 'USDC', amount: '50', recipient: account })
  t.ok(BigInt(requote.expectedOut.wei) < BigInt(swap.minimumOut.wei), 'a fresh quote is below the old floor')
})

t.test('refusals are tool errors that name the problem', async (t) => {
  const recipient = alice.account.address
  const refused = async (name: string, args: Record<string, unknown>, pattern: RegExp) => {
    const result = await mcp.callTool(name, args)
    t.equal(result.isError, true, `${name} ${JSON.stringify(args)} is refused`)
    t.match(result.content[0].text, pattern)
  }
  await refused('uniswap_swap_to_eth', { chain: 'local', token: 'WETH', amount: '1', recipient }, /WETH has no configured swap path to WETH on local \(tokens with one: USDC\)/)
  await refused('uniswap_price', { chain: 'local', token: 'WETH' }, /WETH has no configured swap path/)
  await refused('uniswap_swap_to_eth', { chain: 'local', token: 'DOGE', amount: '1', recipient }, /unknown token "DOGE"/)
  await refused('uniswap_price', { chain: 'local', token: router }, /is not a configured token on local/)
  await refused('uniswap_swap_to_eth', { chain: 'local', token: 'USDC', amount: '1.0000001', recipient }, /has 7 decimals; USDC has 6/)
  await refused('uniswap_swap_to_eth', { chain: 'local', token: 'USDC', amount: '0', recipient }, /amount is 0/)
  await refused('uniswap_swap_to_eth', { chain: 'base', token: 'USDC', amount: '1', recipient }, /Invalid arguments for uniswap_swap_to_eth: \/chain/)
  await refused('uniswap_swap_to_eth', { chain: 'local', token: 'USDC', amount: '1', recipient, slippageBps: 5001 }, /\/slippageBps/)
  await refused('uniswap_price', { chain: 'local' }, /Invalid arguments for uniswap_price/)
})

t.test('price arithmetic', async (t) => {
  t.equal(formatFraction({ numerator: 1n, denominator: 3000n }, 6), '0.000333333')
  t.equal(formatFraction({ numerator: 3000n, denominator: 1n }, 6), '3000')
  t.equal(formatFraction({ numerator: 12_345_678n, denominator: 1000n }, 4), '12345', 'an integer part is never cut')
  t.equal(formatFraction({ numerator: 2n, denominator: 3n }, 3), '0.666', 'rounded down')
  t.equal(formatFraction({ numerator: 0n, denominator: 7n }, 3), '0')
  // A sells as token0 at √p = 2 (4 B per A), then B sells as token1 at √p = 5 (1/25 C per B): 4/25 C per A.
  const [a, b, c] = ['0x000000000000000000000000000000000000000a', '0x000000000000000000000000000000000000000b', '0x0000000000000000000000000000000000000003'] as const
  const q96 = 2n ** 96n
  const twoHops = pathPrice([
    { tokenIn: a, tokenOut: b, sqrtPriceX96: 2n * q96 },
    { tokenIn: b, tokenOut: c, sqrtPriceX96: 5n * q96 },
  ])
  t.equal(twoHops.numerator * 25n, twoHops.denominator * 4n, 'hops multiply, each in its own direction')
  t.same(spotPrices({ numerator: 10n ** 18n, denominator: 3_000_000_000n }, 6), {
    ethPerToken: '0.000333333333333333333',
    tokenPerEth: '3000',
    raw: { weiPerToken: '333333333333333', baseUnitsPerEth: '3000000000' },
  })
})
