import t from 'tap'
import {
  createPublicClient,
  createWalletClient,
  encodeAbiParameters,
  erc20Abi,
  getCreate2Address,
  hashDomain,
  http,
  keccak256,
  parseAbi,
  parseEther,
  parseUnits,
} from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { devnetChain } from '../core/devnet/chain.ts'
import { startAnvil } from '../core/devnet/anvil.ts'
import { uniswapV3PoolArtifact } from '../core/devnet/artifacts.ts'
import { deployDevnet } from '../core/devnet/deploy.ts'
import { mintUsdc, setEthBalance } from '../core/devnet/fund.ts'

// The contracts are checked through their public interfaces, written out here, rather than
// through the artifacts' ABIs the deploy script used: this is what the plugins will call.
const fiatTokenAbi = parseAbi([
  'function version() view returns (string)',
  'function DOMAIN_SEPARATOR() view returns (bytes32)',
])
const factoryAbi = parseAbi(['function getPool(address, address, uint24) view returns (address)'])
const poolAbi = parseAbi([
  'function slot0() view returns (uint160 sqrtPriceX96, int24 tick, uint16, uint16, uint16, uint8, bool)',
  'function liquidity() view returns (uint128)',
  'function token0() view returns (address)',
])
const swapRouter02Abi = parseAbi([
  'struct ExactInputSingleParams { address tokenIn; address tokenOut; uint24 fee; address recipient; uint256 amountIn; uint256 amountOutMinimum; uint160 sqrtPriceLimitX96; }',
  'function exactInputSingle(ExactInputSingleParams params) payable returns (uint256 amountOut)',
])
const quoterV2Abi = parseAbi([
  'struct QuoteExactInputSingleParams { address tokenIn; address tokenOut; uint256 amountIn; uint24 fee; uint160 sqrtPriceLimitX96; }',
  'function quoteExactInputSingle(QuoteExactInputSingleParams params) returns (uint256 amountOut, uint160 sqrtPriceX96After, uint32 initializedTicksCrossed, uint256 gasEstimate)',
])

const canonicalPoolInitCodeHash = '0xe34f199b19b2b4f47f68442619d555527d244f78a3297ea89325f843f87b8b54'

const anvil = await startAnvil()
t.teardown(() => anvil.stop())

const started = performance.now()
const devnet = await deployDevnet(anvil.rpcUrl)
t.comment(`deployDevnet took ${Math.round(performance.now() - started)} ms`)

const client = createPublicClient({ chain: devnetChain(), transport: http(anvil.rpcUrl), pollingInterval: 50 })
const usdcBalance = (address: `0x${string}`) =>
  client.readContract({ address: devnet.usdc, abi: erc20Abi, functionName: 'balanceOf', args: [address] })

t.test('USDC is FiatTokenV2_2 named "USD Coin", EIP-712 version 2', async (t) => {
  const read = { address: devnet.usdc, abi: erc20Abi } as const
  t.equal(await client.readContract({ ...read, functionName: 'name' }), 'USD Coin')
  t.equal(await client.readContract({ ...read, functionName: 'symbol' }), 'USDC')
  t.equal(await client.readContract({ ...read, functionName: 'decimals' }), 6)
  t.equal(await client.readContract({ address: devnet.usdc, abi: fiatTokenAbi, functionName: 'version' }), '2')
  // The domain a signer builds from name, version and chain must be the one the token checks.
  t.equal(
    await client.readContract({ address: devnet.usdc, abi: fiatTokenAbi, functionName: 'DOMAIN_SEPARATOR' }),
    hashDomain({
      domain: { name: 'USD Coin', version: '2', chainId: BigInt(devnet.chainId), verifyingContract: devnet.usdc },
      types: {
        EIP712Domain: [
          { name: 'name', type: 'string' },
          { name: 'version', type: 'string' },
          { name: 'chainId', type: 'uint256' },
          { name: 'verifyingContract', type: 'address' },
        ],
      },
    }),
  )
})

t.test('the npm pool bytecode carries the canonical init code hash the periphery relies on', async (t) => {
  t.equal(keccak256(uniswapV3PoolArtifact.bytecode), canonicalPoolInitCodeHash)
  // …and so the address the periphery computes is where the factory put the pool.
  const [token0, token1] =
    BigInt(devnet.usdc) < BigInt(devnet.weth) ? [devnet.usdc, devnet.weth] : [devnet.weth, devnet.usdc]
  const salt = keccak256(
    encodeAbiParameters([{ type: 'address' }, { type: 'address' }, { type: 'uint24' }], [token0, token1, 500]),
  )
  t.equal(
    getCreate2Address({ from: devnet.uniswap.factory, salt, bytecodeHash: canonicalPoolInitCodeHash }),
    devnet.uniswap.usdcWethPool,
  )
})

t.test('the USDC/WETH 0.05% pool opens at 3,000 USDC per ETH with liquidity', async (t) => {
  t.equal(devnet.uniswap.usdcWethFee, 500)
  const getPool = (a: `0x${string}`, b: `0x${string}`) =>
    client.readContract({
      address: devnet.uniswap.factory,
      abi: factoryAbi,
      functionName: 'getPool',
      args: [a, b, 500],
    })
  t.equal(await getPool(devnet.usdc, devnet.weth), devnet.uniswap.usdcWethPool)
  t.equal(await getPool(devnet.weth, devnet.usdc), devnet.uniswap.usdcWethPool)

  const pool = { address: devnet.uniswap.usdcWethPool, abi: poolAbi } as const
  const [[sqrtPriceX96], liquidity, token0] = await Promise.all([
    client.readContract({ ...pool, functionName: 'slot0' }),
    client.readContract({ ...pool, functionName: 'liquidity' }),
    client.readContract({ ...pool, functionName: 'token0' }),
  ])
  // The pool's price is token1 per token0 in raw units, = sqrtPriceX96² / 2¹⁹². Turn it into raw
  // USDC (6 decimals) per 10¹⁸ wei, whichever way round the tokens sorted.
  const squared = sqrtPriceX96 * sqrtPriceX96
  const usdcPerEth = token0 === devnet.usdc ? (10n ** 18n << 192n) / squared : (10n ** 18n * squared) >> 192n
  const expected = parseUnits('3000', 6)
  const off = usdcPerEth > expected ? usdcPerEth - expected : expected - usdcPerEth
  t.ok(off * 1000n <= expected, `price ${usdcPerEth} raw USDC per ETH is within 0.1% of ${expected}`)
  t.ok(liquidity > 0n, 'the pool has liquidity')
})

t.test('each demo account holds 10,000 USDC', async (t) => {
  t.equal(devnet.demoAccounts.length, 3)
  for (const { address, privateKey } of devnet.demoAccounts) {
    t.equal(privateKeyToAccount(privateKey).address, address)
    t.equal(await usdcBalance(address), parseUnits('10000', 6))
  }
})

t.test('a demo account swaps 100 USDC for WETH through SwapRouter02, as QuoterV2 predicts', async (t) => {
  const [demo] = devnet.demoAccounts
  if (!demo) throw new Error('no demo account')
  const account = privateKeyToAccount(demo.privateKey)
  const wallet = createWalletClient({ account, chain: devnetChain(), transport: http(anvil.rpcUrl) })
  const amountIn = parseUnits('100', 6)
  const swap = { tokenIn: devnet.usdc, tokenOut: devnet.weth, fee: 500, amountIn, sqrtPriceLimitX96: 0n } as const

  const { result: [quoted] } = await client.simulateContract({
    address: devnet.uniswap.quoterV2,
    abi: quoterV2Abi,
    functionName: 'quoteExactInputSingle',
    args: [swap],
  })

  const approve = await wallet.writeContract({
    address: devnet.usdc,
    abi: erc20Abi,
    functionName: 'approve',
    args: [devnet.uniswap.swapRouter02, amountIn],
  })
  t.equal((await client.waitForTransactionReceipt({ hash: approve })).status, 'success')
  const hash = await wallet.writeContract({
    address: devnet.uniswap.swapRouter02,
    abi: swapRouter02Abi,
    functionName: 'exactInputSingle',
    args: [{ ...swap, recipient: account.address, amountOutMinimum: 1n }],
  })
  t.equal((await client.waitForTransactionReceipt({ hash })).status, 'success')

  const wethOut = await client.readContract({
    address: devnet.weth,
    abi: erc20Abi,
    functionName: 'balanceOf',
    args: [account.address],
  })
  t.ok(wethOut > 0n, 'WETH received')
  t.equal(wethOut, quoted, 'the quoter predicted the swap exactly')
  // 100 USDC at 3,000 less the 0.05% fee, the deep pool barely moving: ≈ 0.0333 ETH.
  t.ok(wethOut > parseEther('0.0332') && wethOut < parseEther('0.0334'), `${wethOut} wei is about 100/3000 ETH`)
  t.equal(await usdcBalance(account.address), parseUnits('9900', 6))
})

t.test('funding helpers mint USDC and set ETH balances', async (t) => {
  const someone = '0x000000000000000000000000000000000000bEEF'
  await mintUsdc(anvil.rpcUrl, devnet, someone, parseUnits('250', 6))
  t.equal(await usdcBalance(someone), parseUnits('250', 6))
  await setEthBalance(anvil.rpcUrl, someone, parseEther('2'))
  t.equal(await client.getBalance({ address: someone }), parseEther('2'))
  await setEthBalance(anvil.rpcUrl, someone, 0n)
  t.equal(await client.getBalance({ address: someone }), 0n)
})
