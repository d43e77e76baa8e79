import t from 'tap'
import { getAddress, keccak256, parseAbi, parseTransaction, serializeTransaction, toHex, type Address, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { readFees } from '../../core/chain/fees.ts'
import { GAS_PRICE_ORACLE, L1_FEE_HEADROOM_BPS, readL1DataFee, readL1DataFeeOfBytes, serializeAsSigned } from '../../core/chain/l1DataFee.ts'
import { PRICE_WINDOW_SEC, pathPrice, poolAddress, priceHops, readWeiPerBaseUnit, sqrtPriceX96AtTick } from '../../core/chain/tokenPrice.ts'
import { Networks } from '../../core/chain/networks.ts'
import { blameOf } from '../../core/chain/faults.ts'
import { createLogger } from '../../core/logger.ts'
import { Metrics } from '../../core/metrics.ts'
import { gasPricer } from '../../core/charge/gasPricer.ts'
import { offlineConfig } from '../fixtures/bruno.ts'
import { ethCall, fakeClient, fakeNetwork, networkConfig, type SeenRequest } from './fakeChain.ts'

// The chain-side pricing (fees, the L1 data fee, the pool price) against a node the test answers:
// exact figures from hand computation and from published addresses, and the exact requests made.

const Q96 = 1n << 96n
const Q192 = 1n << 192n
const block = (fields: Record<string, unknown> = {}) => ({ number: '0x10', hash: `0x${'ab'.repeat(32)}`, timestamp: '0x3e8', transactions: [], ...fields })

t.test('readFees: max fee = base fee × 1.2 (rounded down) + the node tip', async (t) => {
  const { client, seen } = fakeClient({ eth_maxPriorityFeePerGas: () => toHex(3n), eth_getBlockByNumber: () => block({ baseFeePerGas: toHex(1_000_000_001n) }) })
  // given the block: one request, for the tip
  t.same(await readFees(client, { baseFeePerGas: 1_000_000_001n } as never), { maxFeePerGas: 1_200_000_001n + 3n, maxPriorityFeePerGas: 3n })
  t.same(seen.map((request) => request.method), ['eth_maxPriorityFeePerGas'])
  // a promise of a block is awaited the same way
  t.same(await readFees(client, Promise.resolve({ baseFeePerGas: 10n } as never)), { maxFeePerGas: 15n, maxPriorityFeePerGas: 3n })
  // without: the latest block is read too
  seen.length = 0
  t.same(await readFees(client), { maxFeePerGas: 1_200_000_004n, maxPriorityFeePerGas: 3n })
  t.same(seen.map((request) => request.method).sort(), ['eth_getBlockByNumber', 'eth_maxPriorityFeePerGas'])
  t.equal(seen.find((request) => request.method === 'eth_getBlockByNumber')!.params[0], 'latest')
  // a block without a base fee (pre-London): the tip alone
  t.same(await readFees(client, { baseFeePerGas: null } as never), { maxFeePerGas: 3n, maxPriorityFeePerGas: 3n })
})

const oracleAbi = parseAbi(['function getL1Fee(bytes _data) view returns (uint256)'])
const runnerTx = { to: getAddress('0x0000000000000000000000000000000000000b0b'), data: '0x12345678' as Hex, gas: 200_000n, nonce: 7, maxFeePerGas: 2_000_000_000n, maxPriorityFeePerGas: 1_000_000n }

function oracle(fee: bigint) {
  const asked: Hex[] = []
  const { client, seen } = fakeClient({
    eth_call: ethCall({
      [GAS_PRICE_ORACLE]: {
        abi: oracleAbi,
        answer: (_name, args) => {
          asked.push(args[0] as Hex)
          return fee
        },
      },
    }),
  })
  return { client, seen, asked }
}

t.test('L1 data fee: none unless the network is OP-stack', async (t) => {
  const { client, seen } = oracle(1_000n)
  t.equal(await readL1DataFee(fakeNetwork(client, networkConfig()), runnerTx), 0n)
  t.equal(await readL1DataFeeOfBytes(fakeNetwork(client, networkConfig()), '0x02'), 0n)
  t.equal(seen.length, 0, 'not even asked')
})

t.test('L1 data fee on OP-stack: the oracle asked at latest for the transaction as it will be signed, plus 25% rounded up', async (t) => {
  t.equal(GAS_PRICE_ORACLE, '0x420000000000000000000000000000000000000F')
  t.equal(L1_FEE_HEADROOM_BPS, 2_500n)
  const config = networkConfig({ l1DataFee: 'op-stack', chainId: 8453 })
  for (const [fee, priced] of [
    [1_000n, 1_250n],
    [1_001n, 1_252n], // 250.25 → 251
    [3n, 4n], // 0.75 → 1
    [4n, 5n],
    [0n, 0n],
  ] as const) {
    const { client, seen, asked } = oracle(fee)
    t.equal(await readL1DataFee(fakeNetwork(client, config), runnerTx), priced, `${fee} → ${priced}`)
    t.equal(asked[0], serializeAsSigned(8453, runnerTx), 'the EIP-1559 transaction with its placeholder signature, with the chain id')
    t.equal(seen[0]!.params[1], 'latest')
  }
  const { client, asked } = oracle(1_000n)
  t.equal(await readL1DataFeeOfBytes(fakeNetwork(client, config), '0x02f8'), 1_250n)
  t.equal(asked[0], '0x02f8', 'the bytes as given')
})

t.test('L1 data fee with an authorization list: priced as the EIP-7702 transaction', async (t) => {
  const account = privateKeyToAccount('0x0000000000000000000000000000000000000000000000000000000000000001')
  const authorization = await account.signAuthorization({ address: getAddress('0x000000005c84f8fd50b21cac312528a64437030e'), chainId: 8453, nonce: 0 })
  const { client, asked } = oracle(8n)
  const config = networkConfig({ l1DataFee: 'op-stack', chainId: 8453 })
  t.equal(await readL1DataFee(fakeNetwork(client, config), { ...runnerTx, authorizationList: [authorization] }), 10n)
  t.equal(asked[0], serializeAsSigned(8453, { ...runnerTx, authorizationList: [authorization] }))
  t.match(asked[0], /^0x04/)
})

t.test('serializeAsSigned: the unsigned fields, a full-size placeholder signature hashed from them, a nonce of 4 bytes at least', async (t) => {
  const account = privateKeyToAccount('0x0000000000000000000000000000000000000000000000000000000000000001')
  const unsigned = { chainId: 8453, type: 'eip1559' as const, value: 0n, ...runnerTx }
  const priced = serializeAsSigned(8453, { ...runnerTx, nonce: 0 })
  const parsed = parseTransaction(priced)
  t.strictSame(
    { ...parsed, r: undefined, s: undefined, yParity: undefined, v: undefined },
    { ...parseTransaction(serializeTransaction({ ...unsigned, nonce: 0xfedcba98 })), r: undefined, s: undefined, yParity: undefined, v: undefined },
    'the same fields, at nonce 0xfedcba98 where the nonce given is shorter',
  )
  t.equal(parsed.yParity, 1)
  const r = keccak256(serializeTransaction({ ...unsigned, nonce: 0xfedcba98 }))
  t.equal(parsed.r, r, 'r: the hash of the unsigned transaction')
  t.equal(parsed.s, keccak256(r), 's: the hash of r')
  t.not(parseTransaction(serializeAsSigned(8453, { ...runnerTx, data: '0x12345679' })).r, parsed.r, 'not fixed: another transaction, another placeholder')
  t.equal(parseTransaction(serializeAsSigned(8453, { ...runnerTx, nonce: 0xffffffff })).nonce, 0xffffffff, 'a longer nonce as given')
  // No shorter than the runner's signed bytes at any nonce below 2³²
  for (const nonce of [0, 7, 300, 0xffffffff]) {
    const signed = await account.signTransaction({ ...unsigned, nonce })
    t.ok(priced.length >= signed.length, `nonce ${nonce}: ${(priced.length - 2) / 2} ≥ ${(signed.length - 2) / 2} bytes`)
  }
  t.equal(priced.length, (await account.signTransaction({ ...unsigned, nonce: 0xfedcba98 })).length, 'as long as the bytes signed at that nonce')
})

t.test('poolAddress: the published Uniswap V3 pools, whichever token is given first', async (t) => {
  const mainnetFactory = getAddress('0x1F98431c8aD98523631AE4a59f267346ea31F984')
  const mainnetUsdc = getAddress('0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48')
  const mainnetWeth = getAddress('0xC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2')
  // USDC/WETH 0.05% and 0.3% on Ethereum
  t.equal(poolAddress(mainnetFactory, mainnetUsdc, mainnetWeth, 500), '0x88e6A0c2dDD26FEEb64F039a2c41296FcB3f5640')
  t.equal(poolAddress(mainnetFactory, mainnetWeth, mainnetUsdc, 500), '0x88e6A0c2dDD26FEEb64F039a2c41296FcB3f5640')
  t.equal(poolAddress(mainnetFactory, mainnetUsdc, mainnetWeth, 3000), '0x8ad599c3A0ff1De082011EFDDc58f1908eb6e6D8')
  // USDC/WETH 0.05% on Base
  const base = networkConfig()
  t.equal(poolAddress(getAddress(base.uniswap.factory), getAddress(base.tokens[0]!.address), getAddress(base.weth), 500), '0xd0b53D9277642d899DF5C87A3966A349A798F224')
})

t.test('pathPrice: sqrtP² / 2¹⁹² selling token0, the inverse selling token1, multiplied along hops', async (t) => {
  const low = getAddress('0x1000000000000000000000000000000000000000')
  const high = getAddress('0x2000000000000000000000000000000000000000')
  const higher = getAddress('0x3000000000000000000000000000000000000000')
  t.same(pathPrice([]), { numerator: 1n, denominator: 1n })
  t.same(pathPrice([{ tokenIn: low, tokenOut: high, sqrtPriceX96: 3n * Q96 }]), { numerator: 9n * Q192, denominator: Q192 })
  t.same(pathPrice([{ tokenIn: high, tokenOut: low, sqrtPriceX96: 3n * Q96 }]), { numerator: Q192, denominator: 9n * Q192 })
  t.same(pathPrice([{ tokenIn: high, tokenOut: low, sqrtPriceX96: 3n * Q96 }, { tokenIn: high, tokenOut: higher, sqrtPriceX96: 2n * Q96 }]), {
    numerator: Q192 * 4n * Q192,
    denominator: 9n * Q192 * Q192,
  })
})

t.test('sqrtPriceX96AtTick: √(1.0001^tick)·2⁹⁶', async (t) => {
  t.equal(sqrtPriceX96AtTick(0), Q96)
  // Uniswap's TickMath.MAX_SQRT_RATIO (tick 887272) and MIN_SQRT_RATIO (tick -887272), to 1e-9 (floating point over 887,272 ticks)
  const close = (actual: bigint, expected: bigint) => t.ok(Math.abs(Number(actual - expected) / Number(expected)) < 1e-9, `${actual} ≈ ${expected}`)
  close(sqrtPriceX96AtTick(887272), 1461446703485210103287273052203988822378723970342n)
  close(sqrtPriceX96AtTick(-887272), 4295128739n)
  // 1.0001^(1/2) = 1.0000499987500625…
  close(sqrtPriceX96AtTick(1), 79232123823359799118286999568n)
  close(sqrtPriceX96AtTick(2), 79236085330515764027303304732n)
})

t.test('priceHops: the configured path, each hop from the previous one', async (t) => {
  const config = networkConfig()
  const usdc = getAddress(config.tokens[0]!.address)
  const weth = getAddress(config.weth)
  t.same(priceHops(fakeNetwork(fakeClient({}).client, config), usdc), [{ tokenIn: usdc, fee: 500, tokenOut: weth }])
  t.equal(priceHops(fakeNetwork(fakeClient({}).client, config), weth), undefined, 'configured without a path')
  t.equal(priceHops(fakeNetwork(fakeClient({}).client, config), getAddress('0x0000000000000000000000000000000000001234')), undefined, 'not configured')
  const dai = getAddress('0x50c5725949a6f0c72e6c4a641f24049a917db0cb')
  const twoHops = networkConfig({
    tokens: [{ symbol: 'DAI', address: dai.toLowerCase(), decimals: 18, swapPath: [{ fee: 100, tokenOut: usdc.toLowerCase() }, { fee: 500, tokenOut: weth.toLowerCase() }] }] as never,
  })
  t.same(priceHops(fakeNetwork(fakeClient({}).client, twoHops), dai), [
    { tokenIn: dai, fee: 100, tokenOut: usdc },
    { tokenIn: usdc, fee: 500, tokenOut: weth },
  ])
})

const poolAbi = parseAbi([
  'function slot0() view returns (uint160 sqrtPriceX96, int24 tick, uint16 observationIndex, uint16 observationCardinality, uint16 observationCardinalityNext, uint8 feeProtocol, bool unlocked)',
  'function observe(uint32[] secondsAgos) view returns (int56[] tickCumulatives, uint160[] secondsPerLiquidityCumulativeX128s)',
  'function observations(uint256 index) view returns (uint32 blockTimestamp, int56 tickCumulative, uint160 secondsPerLiquidityCumulativeX128, bool initialized)',
])

interface FakePool {
  sqrtPriceX96: bigint
  tick?: number
  index?: number
  cardinality?: number
  /** The pool's age in seconds: `observe` further back reverts ('OLD'). */
  age?: number
  /** The average tick over any window. */
  averageTick?: (window: number) => bigint
  /** Each written slot; `tickCumulative` 0 (the default) marks the pool's first observation. */
  observations?: Record<number, { timestamp: number; initialized: boolean; tickCumulative?: bigint }>
}

function fakePools(pools: Record<Address, FakePool>, latestTimestamp = 10_000) {
  const calls: { pool: Address; functionName: string; args: readonly unknown[] }[] = []
  const contracts = Object.fromEntries(
    Object.entries(pools).map(([address, pool]) => [
      address,
      {
        abi: poolAbi,
        answer: (functionName: string, args: readonly unknown[]) => {
          calls.push({ pool: address as Address, functionName, args })
          if (functionName === 'slot0') return [pool.sqrtPriceX96, pool.tick ?? 0, pool.index ?? 0, pool.cardinality ?? 1, pool.cardinality ?? 1, 0, true]
          if (functionName === 'observations') {
            const observation = pool.observations?.[Number(args[0])] ?? { timestamp: 0, initialized: false }
            return [observation.timestamp, observation.tickCumulative ?? 0n, 0n, observation.initialized]
          }
          const points = args[0] as readonly number[]
          const window = points[0]!
          if (pool.age !== undefined && window > pool.age) throw new Error('execution reverted: OLD')
          // a cumulative at each point: the one average tick over the whole window, times the seconds since its start
          const average = pool.averageTick?.(window) ?? 0n
          return [points.map((ago) => 1_000_000n + average * BigInt(window - ago)), points.map(() => 0n)]
        },
      },
    ]),
  )
  const { client, seen } = fakeClient({ eth_call: ethCall(contracts), eth_getBlockByNumber: () => block({ timestamp: toHex(latestTimestamp), baseFeePerGas: '0x1' }) })
  return { client, seen, calls }
}

const config = networkConfig()
const usdc = getAddress(config.tokens[0]!.address)
const weth = getAddress(config.weth)
const usdcPool = poolAddress(getAddress(config.uniswap.factory), usdc, weth, 500)

t.test('readWeiPerBaseUnit: WETH is 1:1, a token without a path is refused, both without a read', async (t) => {
  const { client, seen } = fakePools({})
  t.same(await readWeiPerBaseUnit(fakeNetwork(client, config), weth), { numerator: 1n, denominator: 1n })
  await t.rejects(readWeiPerBaseUnit(fakeNetwork(client, config), getAddress('0x0000000000000000000000000000000000001234')), {
    message: 'no swap path configured for 0x0000000000000000000000000000000000001234',
  })
  t.equal(seen.length, 0)
})

t.test('readWeiPerBaseUnit: the lower of the spot price and the 10-minute average', async (t) => {
  t.equal(PRICE_WINDOW_SEC, 600)
  // WETH (0x42…) is token0, USDC (0x83…) token1: a USDC hop sells token1, so the price is 2¹⁹² / sqrtP².
  // Spot at 2·2⁹⁶ (4 USDC per WETH unit: ¼ wei per USDC unit) under an average at tick 0 (1:1): the spot.
  let pools = fakePools({ [usdcPool]: { sqrtPriceX96: 2n * Q96 } })
  const network = fakeNetwork(pools.client, config)
  t.same(await readWeiPerBaseUnit(network, usdc), { numerator: Q192, denominator: 4n * Q192 })
  t.same(network.priceWindows, [{ pool: usdcPool, seconds: 600 }], 'the window told: the whole 600 s')
  t.same(
    pools.calls.map(({ functionName, args }) => [functionName, args]),
    [
      ['slot0', []],
      ['observe', [[600, 450, 300, 150, 0]]],
    ],
  )
  // Spot at 2⁹⁵ (4 wei per USDC unit) over the same average: the average (1:1).
  pools = fakePools({ [usdcPool]: { sqrtPriceX96: Q96 / 2n } })
  t.same(await readWeiPerBaseUnit(fakeNetwork(pools.client, config), usdc), { numerator: Q192, denominator: Q192 })
  // Equal: either (the spot's form).
  pools = fakePools({ [usdcPool]: { sqrtPriceX96: Q96 } })
  t.same(await readWeiPerBaseUnit(fakeNetwork(pools.client, config), usdc), { numerator: Q192, denominator: Q192 })
})

t.test('readWeiPerBaseUnit: the average tick is rounded toward negative infinity', async (t) => {
  const spotHigh = Q96 / 1000n // a spot price far above any average below: the average is returned
  const expectAt = (tick: number) => {
    const sqrt = sqrtPriceX96AtTick(tick)
    return { numerator: Q192, denominator: sqrt * sqrt }
  }
  // cumulatives 3,001 apart over 600 s: 5.0016… → tick 5
  const pools = fakePools({ [usdcPool]: { sqrtPriceX96: spotHigh, averageTick: () => 5n } })
  t.same(await readWeiPerBaseUnit(fakeNetwork(pools.client, config), usdc), expectAt(5))
  // Cumulatives rising by `total` over the 600 s, evenly: a total divisible by the four parts gives each part the whole's average.
  const linear = (total: bigint) =>
    fakeClient({
      eth_call: ethCall({
        [usdcPool]: {
          abi: poolAbi,
          answer: (functionName, args) =>
            functionName === 'slot0' ? [spotHigh, 0, 0, 1, 1, 0, true] : [(args[0] as readonly number[]).map((ago) => 10_000n + (total * BigInt(600 - ago)) / 600n), [0n, 0n, 0n, 0n, 0n]],
        },
      }),
    })
  // −3,004 over 600 s (−751 over each 150 s): −5.006… → tick −6 (not −5)
  t.same(await readWeiPerBaseUnit(fakeNetwork(linear(-3_004n).client, config), usdc), expectAt(-6))
  // −3,000 over 600 s: exactly −5
  t.same(await readWeiPerBaseUnit(fakeNetwork(linear(-3_000n).client, config), usdc), expectAt(-5))
  // +3,004: 5.006 → 5 (toward −∞ is down for a positive average too)
  t.same(await readWeiPerBaseUnit(fakeNetwork(linear(3_004n).client, config), usdc), expectAt(5))
})

// Issue 43, point 7: a pool pushed to 2× and held for 240 s of the 600 s window moved its average to
// 2,243 USDC/ETH (true 3,000), and Bruno valued USDC at that. The window's parts before the push
// still hold the true price: the lowest of them is taken.
t.test('readWeiPerBaseUnit: a price held for part of the window moves the parts it was held in, not the price', async (t) => {
  const spotHigh = Q96 / 1000n
  const at = (tick: number) => ({ numerator: Q192, denominator: sqrtPriceX96AtTick(tick) ** 2n })
  // Tick 80,000 (the true price) for the window's first 360 s, then 73,000 (USDC pushed up) for its last 240 s.
  const cumulativeAt = (ago: number) => 80_000n * BigInt(Math.min(600 - ago, 360)) + 73_000n * BigInt(Math.max(240 - ago, 0))
  const held = fakeClient({
    eth_call: ethCall({
      [usdcPool]: {
        abi: poolAbi,
        answer: (functionName, args) =>
          functionName === 'slot0' ? [spotHigh, 0, 0, 1, 1, 0, true] : [(args[0] as readonly number[]).map((ago) => cumulativeAt(ago)), [0n, 0n, 0n, 0n, 0n]],
      },
    }),
  })
  // The whole window averages 77,200; the first two parts hold 80,000: the true price, the lowest for USDC.
  t.same(await readWeiPerBaseUnit(fakeNetwork(held.client, config), usdc), at(80_000))
})

t.test('readWeiPerBaseUnit: a pool younger than the window is averaged from its oldest observation', async (t) => {
  const spotHigh = Q96 / 1000n
  const at = (tick: number) => ({ numerator: Q192, denominator: sqrtPriceX96AtTick(tick) ** 2n })
  // observations ring of 3, last written at index 1, the pool born with its slot 2 (its first observation): 200 s old
  let pools = fakePools(
    { [usdcPool]: { sqrtPriceX96: spotHigh, index: 1, cardinality: 3, age: 250, averageTick: (window) => (window === 200 ? 7n : 0n), observations: { 2: { timestamp: 9_800, initialized: true } } } },
    10_000,
  )
  const young = fakeNetwork(pools.client, config)
  t.same(await readWeiPerBaseUnit(young, usdc), at(7))
  t.same(young.priceWindows, [{ pool: usdcPool, seconds: 200 }], 'the window told: the 200 s the pool has, not 600 (issue 28, point 8)')
  t.same(
    pools.calls.filter(({ functionName }) => functionName !== 'slot0').map(({ functionName, args }) => [functionName, args]),
    [
      ['observe', [[600, 450, 300, 150, 0]]],
      ['observations', [2n]],
      ['observe', [[200, 150, 100, 50, 0]]],
    ],
  )
  t.equal(pools.seen.find((request) => request.method === 'eth_getBlockByNumber')!.params[0], 'latest')
  // the same ring wrapped: its oldest observation is not the pool's first (cumulatives written), so what came
  // before it was overwritten; the price is refused rather than taken over 200 s
  pools = fakePools(
    { [usdcPool]: { sqrtPriceX96: spotHigh, index: 1, cardinality: 3, age: 250, averageTick: (window) => (window === 200 ? 7n : 0n), observations: { 2: { timestamp: 9_800, initialized: true, tickCumulative: -4_000_000n } } } },
    10_000,
  )
  const wrapped = fakeNetwork(pools.client, config)
  await t.rejects(readWeiPerBaseUnit(wrapped, usdc), {
    name: 'BrunoFault',
    message: `cannot price through the pool ${usdcPool} now: its price history covers only the last 200 s of the 600 s window (its 3 observations were overwritten by recent swaps, which a burst of swaps can do on purpose); try again later`,
  })
  t.notOk(pools.calls.some(({ functionName, args }) => functionName === 'observe' && (args[0] as readonly number[])[0] === 200), 'no average taken over what is left')
  t.same(wrapped.priceWindows, [], 'no window told for a price refused')
  // the ring not yet full (index 2 never written): the oldest is index 0
  pools = fakePools(
    { [usdcPool]: { sqrtPriceX96: spotHigh, index: 1, cardinality: 3, age: 350, averageTick: (window) => (window === 300 ? 9n : 0n), observations: { 0: { timestamp: 9_700, initialized: true } } } },
    10_000,
  )
  t.same(await readWeiPerBaseUnit(fakeNetwork(pools.client, config), usdc), at(9))
  t.same(
    pools.calls.filter(({ functionName }) => functionName === 'observations').map(({ args }) => args),
    [[2n], [0n]],
  )
  // the last index wraps to 0: index 2 of 3
  pools = fakePools(
    { [usdcPool]: { sqrtPriceX96: spotHigh, index: 2, cardinality: 3, age: 150, averageTick: (window) => (window === 100 ? 11n : 0n), observations: { 0: { timestamp: 9_900, initialized: true } } } },
    10_000,
  )
  t.same(await readWeiPerBaseUnit(fakeNetwork(pools.client, config), usdc), at(11))
  // created this very second: the spot tick itself
  pools = fakePools({ [usdcPool]: { sqrtPriceX96: spotHigh, tick: 13, index: 0, cardinality: 1, age: 0, observations: { 0: { timestamp: 10_000, initialized: true } } } }, 10_000)
  t.same(await readWeiPerBaseUnit(fakeNetwork(pools.client, config), usdc), at(13))
  t.equal(pools.calls.filter(({ functionName }) => functionName === 'observe').length, 1, 'no second observe')
  // an oldest observation "in the future" (a clock skew) counts as no history, not a negative window
  pools = fakePools({ [usdcPool]: { sqrtPriceX96: spotHigh, tick: 15, index: 0, cardinality: 1, age: 0, observations: { 0: { timestamp: 10_050, initialized: true } } } }, 10_000)
  t.same(await readWeiPerBaseUnit(fakeNetwork(pools.client, config), usdc), at(15))
})

t.test('readWeiPerBaseUnit: a pool read the node fails is the chain\'s, one that reverts is Bruno\'s; neither is the caller\'s', async (t) => {
  const answers = (slot0: () => unknown, observe: () => unknown) =>
    fakeClient({
      eth_call: ethCall({ [usdcPool]: { abi: poolAbi, answer: (functionName) => (functionName === 'slot0' ? slot0() : observe()) } }),
      eth_getBlockByNumber: () => block({ timestamp: toHex(10_000) }),
    })
  const slot0 = () => [Q96, 0, 0, 1, 1, 0, true]
  const overloaded = () => {
    throw Object.assign(new Error('rate limited'), { code: -32005 })
  }
  // observe failing as a node failure is not read as a young pool (no fallback to the oldest observation)
  const failing = answers(slot0, overloaded)
  const error = await readWeiPerBaseUnit(fakeNetwork(failing.client, config), usdc).catch((caught: unknown) => caught)
  t.equal(blameOf(error).side, 'chain', String(error))
  t.notOk(
    failing.seen.some((request) => request.method === 'eth_getBlockByNumber'),
    'no oldest-observation read after a node failure',
  )
  // slot0 reverting: the pool (or the configured factory) is wrong, which the caller cannot mend
  const reverting = answers(() => {
    throw Object.assign(new Error('execution reverted'), { code: 3, data: '0x' })
  }, () => [[0n, 0n, 0n, 0n, 0n], [0n, 0n, 0n, 0n, 0n]])
  const reverted = await readWeiPerBaseUnit(fakeNetwork(reverting.client, config), usdc).catch((caught: unknown) => caught)
  t.same(blameOf(reverted), {
    side: 'bruno',
    message: `cannot read the price of the pool ${usdcPool} (${usdc}→${weth}, fee 500): its slot0() or observe() reverted`,
  })
})

t.test('Network.notePriceWindow: the gauge per pool, a warning the first time a window is short and a line when it is whole again', async (t) => {
  const env: NodeJS.ProcessEnv = {}
  const metrics = new Metrics()
  const lines: string[] = []
  const log = createLogger({ secrets: [], destination: { write: (line: string) => lines.push(line) } })
  const network = new Networks(offlineConfig(env), env, { metrics, log }).get('local')
  const gauge = async () => (await metrics.registry.getSingleMetricAsString('bruno_price_window_seconds')).split('\n').filter((line) => !line.startsWith('#'))
  network.notePriceWindow(usdcPool, 600)
  t.same(await gauge(), [`bruno_price_window_seconds{chain="local",pool="${usdcPool}"} 600`])
  t.same(lines, [], 'the whole window: nothing logged')
  network.notePriceWindow(usdcPool, 120)
  network.notePriceWindow(usdcPool, 121)
  t.same(await gauge(), [`bruno_price_window_seconds{chain="local",pool="${usdcPool}"} 121`])
  t.equal(lines.length, 1, 'one warning while the pool stays young')
  t.match(JSON.parse(lines[0]!), { level: 40, chain: 'local', pool: usdcPool, windowSec: 120, wantedSec: 600, msg: /younger than the price window/ })
  network.notePriceWindow(usdcPool, 600)
  t.equal(lines.length, 2)
  t.match(JSON.parse(lines[1]!), { level: 30, pool: usdcPool, windowSec: 600, msg: /now covers the whole price window/ })
})

t.test('readWeiPerBaseUnit: along two hops, the product of each pool’s price', async (t) => {
  const dai = getAddress('0x50c5725949a6f0c72e6c4a641f24049a917db0cb') // below USDC: DAI is token0 of DAI/USDC
  const twoHops = networkConfig({ tokens: [{ symbol: 'DAI', address: dai, decimals: 18, swapPath: [{ fee: 100, tokenOut: usdc }, { fee: 500, tokenOut: weth }] }] as never })
  const daiPool = poolAddress(getAddress(twoHops.uniswap.factory), dai, usdc, 100)
  // DAI→USDC sells token0 at spot 3² = 9 (average 1: the lower is 1); USDC→WETH sells token1 at spot 1/4 (average 1: ¼)
  const pools = fakePools({ [daiPool]: { sqrtPriceX96: 3n * Q96 }, [usdcPool]: { sqrtPriceX96: 2n * Q96 } })
  t.same(await readWeiPerBaseUnit(fakeNetwork(pools.client, twoHops), dai), { numerator: Q192 * Q192, denominator: Q192 * 4n * Q192 })
})

t.test('gasPricer: fees and price read once, every amount priced at them with the quote margin', async (t) => {
  const pools = fakePools({ [usdcPool]: { sqrtPriceX96: 2n * Q96 } })
  const requests: SeenRequest[] = []
  const { client } = fakeClient({
    eth_maxPriorityFeePerGas: () => toHex(1n),
    eth_getBlockByNumber: (request) => {
      requests.push(request)
      return block({ baseFeePerGas: toHex(10n) })
    },
    eth_call: (request) => pools.client.request({ method: 'eth_call', params: request.params as never }),
  })
  const token = { address: usdc, symbol: 'USDC', decimals: 6 }
  const pricer = await gasPricer(fakeNetwork(client, networkConfig({ margins: { ...config.margins, quoteBps: 5_000 } })), token)
  // max fee 10 × 1.2 + 1 = 13; price ¼ wei per unit
  t.equal(pricer.feePerGas, 13n)
  t.equal(pricer.marginBps, 5_000)
  t.same(pricer.weiPerBaseUnit, { numerator: Q192, denominator: 4n * Q192 })
  t.equal(pricer.token, token)
  // 100 gas × 13 = 1,300 wei, × 1.5 = 1,950 wei, at ¼ wei per unit = 7,800 units
  t.equal(pricer.amountFor(100n), 7_800n)
  // with 100 wei of L1 fee: 1,400 × 1.5 = 2,100 wei → 8,400 units
  t.equal(pricer.amountFor(100n, 100n), 8_400n)
})
