import t from 'tap'
import { erc20Abi, maxUint256, parseAbi, parseEther, type Hex } from 'viem'
import { generatePrivateKey } from 'viem/accounts'
import { weth9Artifact } from '../../core/devnet/artifacts.ts'
import { pathPrice, readWeiPerBaseUnit, sqrtPriceX96AtTick, uniswapV3PoolAbi } from '../../core/chain/tokenPrice.ts'
import { tokenToWei } from '../../core/charge/pricing.ts'
import { fakeNetwork } from '../unit/fakeChain.ts'
import { startDevnetBruno } from '../fixtures/devnetBruno.ts'
import { RawMcpClient } from '../fixtures/mcpHttp.ts'
import { adversaryChain, ATTACK_FEES, bindings, fundedPayer, ledgerEntry, ledgerLine, transferPayment } from './adversary.ts'

// Issue 12, state changed before inclusion — the price. Bruno values a payment at the pool's spot price
// (slot0) of the latest block, at submit and at every send; the ledger (and the runner's books) value it
// where the transaction is included. An attacker who moves the USDC/WETH pool before Bruno checks, and
// moves it back in the inclusion block ahead of the runner's transaction, pays Bruno a fraction of the
// gas's value. It costs the attacker the pool's fee on the round trip (0.05% × ~730 WETH each way here),
// far more than the runner loses: griefing, not profit — but the runner loses on that submission.

const bruno = await startDevnetBruno(t, { groups: ['bruno'], pollMs: 100 })
const { deployment } = bruno
const chain = adversaryChain(bruno)
const mcp = new RawMcpClient(`${bruno.mcpUrl}/bruno`)
const api = bindings(bruno, mcp)
const network = bruno.config.networks[0]!
const router = deployment.uniswap.swapRouter02
const attacker = chain.sponsor
const routerAbi = parseAbi([
  'struct Params { address tokenIn; address tokenOut; uint24 fee; address recipient; uint256 amountIn; uint256 amountOutMinimum; uint160 sqrtPriceLimitX96; }',
  'function exactInputSingle(Params params) payable returns (uint256 amountOut)',
])
// The pool's spot price (slot0), what the attacker moves; Bruno's own price is the lower of it and the time-weighted one.
const price = async () => {
  const [sqrtPriceX96] = await chain.client.readContract({ address: deployment.uniswap.usdcWethPool, abi: uniswapV3PoolAbi, functionName: 'slot0' })
  return pathPrice([{ tokenIn: deployment.usdc, tokenOut: deployment.weth, sqrtPriceX96 }])
}
const brunoPrice = () => readWeiPerBaseUnit(fakeNetwork(chain.client, network), deployment.usdc)
const swap = (tokenIn: Hex, tokenOut: Hex, amountIn: bigint, fees?: typeof ATTACK_FEES) =>
  attacker.writeContract({
    address: router,
    abi: routerAbi,
    functionName: 'exactInputSingle',
    args: [{ tokenIn, tokenOut, fee: deployment.uniswap.usdcWethFee, recipient: attacker.account.address, amountIn, amountOutMinimum: 0n, sqrtPriceLimitX96: 0n }],
    gas: 400_000n,
    ...(fees ?? {}),
  })

t.test('the pool is pushed up before Bruno prices, and back down ahead of the runner in the inclusion block', async (t) => {
  const fair = await price()
  const key = generatePrivateKey()
  const payer = await fundedPayer(bruno, chain, key, 100_000_000n)
  // The attacker buys USDC with 732 WETH: USDC's price in the pool about triples.
  const wethIn = parseEther('732')
  const wethOf = () => chain.client.readContract({ address: deployment.weth, abi: erc20Abi, functionName: 'balanceOf', args: [attacker.account.address] })
  const wethBefore = await wethOf()
  await chain.mined(await attacker.writeContract({ address: deployment.weth, abi: weth9Artifact.abi, functionName: 'deposit', value: wethIn }))
  await chain.mined(await attacker.writeContract({ address: deployment.weth, abi: erc20Abi, functionName: 'approve', args: [router, maxUint256] }))
  await chain.mined(await attacker.writeContract({ address: deployment.usdc, abi: erc20Abi, functionName: 'approve', args: [router, maxUint256] }))
  const usdcBefore = await chain.usdcOf(attacker.account.address)
  await chain.mined(await swap(deployment.weth, deployment.usdc, wethIn))
  const bought = (await chain.usdcOf(attacker.account.address)) - usdcBefore
  const pumped = await price()
  const factor = Number(tokenToWei(1_000_000n, pumped)) / Number(tokenToWei(1_000_000n, fair))
  t.ok(factor > 2.5, `USDC's pool price was pushed ×${factor.toFixed(2)}`)
  const priced = Number(tokenToWei(1_000_000n, await brunoPrice())) / Number(tokenToWei(1_000_000n, fair))
  t.ok(priced < 1.3, `Bruno values USDC at ×${priced.toFixed(2)} the fair price: the time-weighted price holds it down`)

  // The payer pays what Bruno quotes now: a third of the gas's fair value.
  const call = { to: '0x0000000000000000000000000000000000000000', data: '0x' }
  const quote = await mcp.call('quote', { chain: 'local', call, token: 'USDC', payment: 'authorization' })
  const amount = BigInt(quote.amountBaseUnits)
  const payment = await transferPayment(bruno, key, amount)
  const { value: submitted, hash } = await chain.inOneBlock(() => api.submitAndSend('mcp', { call, payment }), {
    attack: async () => [await swap(deployment.usdc, deployment.weth, bought, ATTACK_FEES)],
  })
  t.ok(submitted.accepted && hash, 'accepted and sent at the pushed price')
  if (!submitted.accepted) return
  const view = await api.settled('mcp', submitted.id)
  t.equal(view.stage, 'done', view.reason)
  const entry = await ledgerEntry(bruno, hash!)
  ledgerLine(t, 'price pushed before the checks, restored ahead of the runner', entry)
  t.comment(
    `price | fair ${tokenToWei(1_000_000n, fair)} wei per USDC, pushed ×${factor.toFixed(2)} when Bruno priced, ${tokenToWei(1_000_000n, await price())} wei per USDC at inclusion; ` +
      `payer paid ${amount} base units (${payer.address}); the attacker's round trip left it ${formatWeth(wethBefore + wethIn - (await wethOf()))} WETH poorer`,
  )
  t.ok(entry.spentWei <= entry.keptWei, `the runner spent ${entry.spentWei} wei ≤ the payment's ${entry.keptWei} wei at the price it was included at`)
})

function formatWeth(wei: bigint): string {
  return (Number(wei) / 1e18).toFixed(4)
}

// Issue 43, point 7: the pool pushed to 2× and held for 240 s of the 600 s window moved its average to
// 2,243 USDC/ETH (true 3,000), and Bruno kept 0.78 of what it spent. Bruno now takes the lowest of the
// spot price, the window's average and each of its four parts' averages: the parts before the push
// still hold the fair price, so a price must be held the whole window to move Bruno's.
t.test('a price pushed and held for 240 s of the 600 s window: Bruno still values USDC at the parts before the push', async (t) => {
  // A window's worth of the fair price first.
  await chain.testClient.increaseTime({ seconds: 600 })
  await chain.testClient.mine({ blocks: 1 })
  const fair = await brunoPrice()
  const pool = deployment.uniswap.usdcWethPool
  const wethIn = parseEther('300')
  await chain.mined(await attacker.writeContract({ address: deployment.weth, abi: weth9Artifact.abi, functionName: 'deposit', value: wethIn }))
  const usdcBefore = await chain.usdcOf(attacker.account.address)
  await chain.mined(await swap(deployment.weth, deployment.usdc, wethIn))
  const bought = (await chain.usdcOf(attacker.account.address)) - usdcBefore
  const factor = (price: Awaited<ReturnType<typeof brunoPrice>>) => Number(tokenToWei(1_000_000n, price)) / Number(tokenToWei(1_000_000n, fair))
  const pushed = factor(await price())
  t.ok(pushed > 1.5, `USDC's pool price pushed ×${pushed.toFixed(2)}`)
  // Held for 240 s.
  await chain.testClient.increaseTime({ seconds: 240 })
  await chain.testClient.mine({ blocks: 1 })
  const [cumulatives] = await chain.client.readContract({ address: pool, abi: uniswapV3PoolAbi, functionName: 'observe', args: [[600, 0]] })
  const wholeTick = Number((cumulatives[1]! - cumulatives[0]!) / 600n)
  const whole = factor(pathPrice([{ tokenIn: deployment.usdc, tokenOut: deployment.weth, sqrtPriceX96: sqrtPriceX96AtTick(wholeTick) }]))
  t.ok(whole > 1.15, `the window's average alone values USDC at ×${whole.toFixed(2)} the fair price (what Bruno took before)`)
  const priced = factor(await brunoPrice())
  t.ok(priced < 1.01, `Bruno values USDC at ×${priced.toFixed(4)} the fair price: the window's first parts hold it`)
  t.comment(`held | pushed ×${pushed.toFixed(2)} for 240 s: the whole window's average ×${whole.toFixed(3)}, Bruno's price ×${priced.toFixed(4)}`)
  // Swapped back, and a window's worth of that price again for the next case.
  await chain.mined(await swap(deployment.usdc, deployment.weth, bought))
  await chain.testClient.increaseTime({ seconds: 600 })
  await chain.testClient.mine({ blocks: 1 })
})

t.test('the price history flushed (issue 27, point 2): one large swap, then a swap a second until the pool\'s ring holds nothing older; Bruno refuses to price', async (t) => {
  const pool = deployment.uniswap.usdcWethPool
  // The pool's ring cut to 64 observations, as the devnet had it (preflight refuses to serve such a pool:
  // test/preflight.test.ts; the relay must not price from it either). slot0 packs the ring's size at bits 200-231.
  const slot0 = BigInt((await chain.client.getStorageAt({ address: pool, slot: '0x0' }))!)
  const [, , index] = await chain.client.readContract({ address: pool, abi: uniswapV3PoolAbi, functionName: 'slot0' })
  t.ok(index < 63, `the ring's last write (${index}) is inside the first 64 slots`)
  const ringMask = ((1n << 32n) - 1n) << 200n
  await chain.testClient.setStorageAt({ address: pool, index: '0x0', value: `0x${((slot0 & ~ringMask) | (64n << 200n) | (64n << 216n)).toString(16).padStart(64, '0')}` })
  const fair = await brunoPrice()
  const call = { to: '0x0000000000000000000000000000000000000000', data: '0x' }
  const fairQuote = await mcp.call('quote', { chain: 'local', call, token: 'USDC', payment: 'authorization' })
  const key = generatePrivateKey()
  await fundedPayer(bruno, chain, key, 100_000_000n)
  // What the fair quote asks, signed before the attack: worth half the gas once USDC is valued at half its price.
  const payment = await transferPayment(bruno, key, BigInt(fairQuote.amountBaseUnits) / 2n)
  // The attacker buys USDC with 732 WETH: its pool price about triples; the time-weighted price holds Bruno's down.
  const wethIn = parseEther('732')
  await chain.mined(await attacker.writeContract({ address: deployment.weth, abi: weth9Artifact.abi, functionName: 'deposit', value: wethIn + parseEther('100') }))
  await chain.mined(await swap(deployment.weth, deployment.usdc, wethIn))
  const pushed = Number(tokenToWei(1_000_000n, await brunoPrice())) / Number(tokenToWei(1_000_000n, fair))
  t.ok(pushed < 1.3, `right after the swap Bruno values USDC at ×${pushed.toFixed(2)}`)

  // Then small swaps both ways, one block a second, each moving the tick (so each writes an observation), until
  // the ring's oldest observation is younger than the window: the history before the large swap is gone.
  const flushed = async () => {
    const [, , last, cardinality] = await chain.client.readContract({ address: pool, abi: uniswapV3PoolAbi, functionName: 'slot0' })
    const [oldest, block] = await Promise.all([
      chain.client.readContract({ address: pool, abi: uniswapV3PoolAbi, functionName: 'observations', args: [BigInt((last + 1) % cardinality)] }),
      chain.client.getBlock({ blockTag: 'latest' }),
    ])
    return { cardinality, flushed: oldest[3] && oldest[1] !== 0n && Number(block.timestamp) - oldest[0] < 600, age: Number(block.timestamp) - oldest[0] }
  }
  await chain.testClient.setBlockTimestampInterval({ interval: 1 })
  let swaps = 0
  try {
    for (; swaps < 300 && !(await flushed()).flushed; swaps++) {
      const usdcHeld = await chain.usdcOf(attacker.account.address)
      await chain.mined(swaps % 2 === 0 ? await swap(deployment.weth, deployment.usdc, parseEther('0.3')) : await swap(deployment.usdc, deployment.weth, usdcHeld / 2_000n))
    }
  } finally {
    await chain.testClient.removeBlockTimestampInterval()
  }
  const ring = await flushed()
  t.ok(ring.flushed, `${swaps} swaps flushed the ring of ${ring.cardinality}: its oldest observation is ${ring.age} s old`)

  // What the old fallback took: the average over what is left of the ring, about the pushed spot price.
  const [cumulatives] = await chain.client.readContract({ address: pool, abi: uniswapV3PoolAbi, functionName: 'observe', args: [[ring.age, 0]] })
  const leftTick = Number((cumulatives[1]! - cumulatives[0]!) / BigInt(ring.age))
  const left = pathPrice([{ tokenIn: deployment.usdc, tokenOut: deployment.weth, sqrtPriceX96: sqrtPriceX96AtTick(leftTick) }])
  const leftFactor = Number(tokenToWei(1_000_000n, left)) / Number(tokenToWei(1_000_000n, fair))
  t.ok(leftFactor > 2, `the average over the ring's last ${ring.age} s values USDC at ×${leftFactor.toFixed(2)} the fair price`)
  await t.rejects(brunoPrice(), { name: 'BrunoFault', message: new RegExp(`^cannot price through the pool ${pool} now: its price history covers only the last \\d+ s of the 600 s window`) })
  const reply = await mcp.request('tools/call', { name: 'quote', arguments: { chain: 'local', call, token: 'USDC', payment: 'authorization' } }, 'quote')
  t.equal(reply.json.error?.code, -32603, 'quote: Bruno\'s own fault, not a price')
  t.match(reply.json.error?.message, /^cannot price through the pool/, 'saying why')
  const submitted = await api.submit('rest', { call, payment }).catch((error: Error) => error.message)
  t.match(typeof submitted === 'string' ? submitted : JSON.stringify(submitted), /REST submit answered 5\d\d/, 'submit: half the fair price refused as Bruno\'s fault, nothing accepted')
  t.comment(`flush | ${swaps} swaps a second apart emptied a ring of ${ring.cardinality}; quote answered ${reply.json.error?.message}`)
})
