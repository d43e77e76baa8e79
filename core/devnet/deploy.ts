import {
  type Abi,
  type Address,
  type Hash,
  type Hex,
  createPublicClient,
  createTestClient,
  createWalletClient,
  getAddress,
  http,
  maxUint256,
  parseEther,
  parseUnits,
  toHex,
  zeroAddress,
} from 'viem'
import { mnemonicToAccount, privateKeyToAccount } from 'viem/accounts'
import { devnetChain } from './chain.ts'
import { PRESETS, type NetworkPreset, type PresetName } from '../../config/presets.ts'
import { DEVNET_TREASURY } from '../../config/devnet.ts'
import { payeeVaultArtifact, runnerArtifact } from '../../contracts/artifacts.ts'
import { loadBuiltinGroups } from './builtinGroups.ts'
import { GAS_PRICE_ORACLE } from '../chain/l1DataFee.ts'
import { deployCodeTo } from './deployCodeTo.ts'
import { PRICE_WINDOW_SEC, uniswapV3PoolAbi } from '../chain/tokenPrice.ts'
import {
  fiatTokenV2_2Artifact,
  linkBytecode,
  nonfungiblePositionManagerArtifact,
  quoterV2Artifact,
  signatureCheckerArtifact,
  signatureCheckerName,
  swapRouter02Artifact,
  uniswapV3FactoryArtifact,
  weth9Artifact,
} from './artifacts.ts'

/** Where everything landed, and the keys that own and use it. */
export type DevnetDeployment = {
  chainId: number
  rpcUrl: string
  /** USDC's owner and every one of its roles (master minter, minter, pauser, blacklister). */
  deployer: { address: Address; privateKey: Hex }
  usdc: Address
  weth: Address
  uniswap: {
    factory: Address
    positionManager: Address
    swapRouter02: Address
    quoterV2: Address
    usdcWethPool: Address
    usdcWethFee: 500
  }
  /** anvil's accounts #1–#3, each holding 10,000 USDC (and anvil's 10,000 ETH). */
  demoAccounts: { address: Address; privateKey: Hex }[]
  /**
   * An account with 10,000 USDC and no ETH, undelegated: what an agent's fresh account looks like
   * (it cannot pay gas, so Bruno's runner must). Its key is the well-known test key 0x…01, never
   * an anvil dev account (anvil gives those 10,000 ETH each).
   */
  noEthAccount: { address: Address; privateKey: Hex }
  /**
   * Our Runner contract (owned by the deployer), the EOA it accepts calls from (anvil's account #4,
   * 10,000 ETH), and the further operators it allows (`deployDevnet(…, { lanes })`: each a lane of
   * the runner, 10,000 ETH each; none by default).
   */
  runner: { contract: Address; operator: { address: Address; privateKey: Hex }; lanes: { address: Address; privateKey: Hex }[] }
  /**
   * A `PayeeVault` for the Runner, owned by `DEVNET_TREASURY`: a payee that refunds each payer what
   * its relay did not cost (SPEC §6).
   */
  payeeVault: Address
  /** The preset whose identity the chain took (`deployDevnet(…, { as })`): its contracts are at the preset's addresses. */
  preset?: PresetName
}

export interface DeployDevnetOptions {
  /**
   * Take a preset's identity: USDC, WETH and Uniswap's factory, SwapRouter02 and QuoterV2 are
   * built at the preset's addresses (so the USDC/WETH pool is at the address the factory gives
   * it there), and on an OP-stack preset a GasPriceOracle stand-in answers at its predeploy. Start
   * anvil with the preset's chain id (`startAnvil({ chainId })`); the chain must not hold those
   * addresses already.
   */
  readonly as?: PresetName
  /** Further runner keys to allow as operators (`runner.lanes`), besides anvil #4: keys of anvil's mnemonic at m/44'/60'/1'/0/i, funded here. */
  readonly lanes?: number
}

/**
 * The devnet's GasPriceOracle at OP-stack's predeploy address: runtime code that answers every call
 * with 32 zero bytes, so `getL1Fee(bytes)` is 0 — which is what anvil charges (it charges no L1
 * data fee, even with `--optimism`). PUSH1 0x20, PUSH1 0x00, RETURN.
 */
const zeroGasPriceOracle: Hex = '0x60206000f3'

// anvil's well-known dev keys (mnemonic "test test … junk"): #0 deploys, #1–#3 are the demo users.
const deployerKey = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80' as const
const demoKeys = [
  '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d',
  '0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a',
  '0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6',
] as const
// The no-ETH demo account: private key 1, a well-known test key outside anvil's funded dev accounts.
const noEthKey = '0x0000000000000000000000000000000000000000000000000000000000000001' as const
// anvil #4: the runner, which nothing else on the devnet touches.
const operatorKey = '0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a' as const

const usdcDecimals = 6
// USDC per 1 ETH, the pool's opening price.
const ethPriceUsdc = parseUnits('3000', usdcDecimals)
const poolFee = 500 as const
// The factory fixes fee 500 to tick spacing 10; positions must start and end on that grid,
// within TickMath's bounds of ±887272.
const tickSpacing = 10
const maxTick = 887_272
const liquidity = { weth: parseEther('1000'), usdc: parseUnits('3000000', usdcDecimals) } as const
const demoUsdc = parseUnits('10000', usdcDecimals)

/**
 * Deploys USDC (FiatTokenV2_2), WETH9 and Uniswap V3 (factory, position manager, SwapRouter02,
 * QuoterV2) on a fresh anvil, opens a USDC/WETH 0.05% pool at 3,000 USDC per ETH with full-range
 * liquidity, gives anvil's accounts #1–#3 and a no-ETH account (test key 0x…01) 10,000 USDC each,
 * deploys our Runner for anvil's account #4, then runs the built-in groups' `devnet` hooks (each
 * delegate's contracts, at their own addresses). Deterministic: the same fresh chain always yields
 * the same addresses. With `as`, the chain takes a preset's identity: USDC,
 * WETH, the factory, SwapRouter02 and QuoterV2 are built at the preset's addresses (the pool then
 * lands where the factory puts it on that chain), the rest as above.
 *
 * @example
 * const anvil = await startAnvil()
 * const devnet = await deployDevnet(anvil.rpcUrl)
 * devnet.uniswap.usdcWethPool // '0x…'
 *
 * const base = await deployDevnet((await startAnvil({ chainId: 8453 })).rpcUrl, { as: 'base' })
 * base.usdc // '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913'
 */
export async function deployDevnet(rpcUrl: string, options: DeployDevnetOptions = {}): Promise<DevnetDeployment> {
  const transport = http(rpcUrl)
  const chainId = await createPublicClient({ transport }).getChainId()
  const preset: NetworkPreset | undefined = options.as && PRESETS[options.as]
  if (preset && preset.chainId !== chainId) throw new Error(`deployDevnet: the chain's id is ${chainId}, the preset "${options.as}" is chain ${preset.chainId}: start anvil with chainId ${preset.chainId}`)
  const chain = devnetChain(chainId)
  const testClient = createTestClient({ mode: 'anvil', chain, transport })
  // Automine makes receipts immediate; a short interval keeps interval-mined chains quick too.
  const client = createPublicClient({ chain, transport, pollingInterval: 50 })
  const deployer = privateKeyToAccount(deployerKey)
  const wallet = createWalletClient({ account: deployer, chain, transport })

  const confirm = async (step: string, hash: Hash) => {
    const receipt = await client.waitForTransactionReceipt({ hash })
    if (receipt.status !== 'success') throw new Error(`deployDevnet: ${step} reverted (${hash})`)
    return receipt
  }
  const deploy = async (step: string, artifact: { abi: Abi; bytecode: Hex }, args: readonly unknown[] = []) => {
    const { contractAddress } = await confirm(step, await wallet.deployContract({ ...artifact, args }))
    if (!contractAddress) throw new Error(`deployDevnet: ${step} created no contract`)
    // Receipts carry lowercase addresses; checksum them like every other address we return.
    return getAddress(contractAddress)
  }
  // A contract built at a preset's address (deployCodeTo), or deployed where it lands.
  const build = async (step: string, artifact: { abi: Abi; bytecode: Hex }, args: readonly unknown[], at: Address | undefined) =>
    at ? deployCodeTo(rpcUrl, deployerKey, { ...artifact, args }, at) : deploy(step, artifact, args)
  // A call's gas is estimated against the pending block, whose timestamp may be a second older than
  // the block that mines it; Uniswap's oracle writes an observation only in a new second, so a
  // bare estimate can fall short (the position mint reverted now and then). A quarter more covers it.
  const call = async (address: Address, abi: Abi, functionName: string, args: readonly unknown[], value?: bigint) => {
    const request = { address, abi, functionName, args, account: deployer, ...(value ? { value } : {}) }
    const gas = ((await client.estimateContractGas(request)) * 5n) / 4n
    return confirm(functionName, await wallet.writeContract({ ...request, gas }))
  }

  // 1. USDC, with the deployer in every role, initialized through each FiatToken version in turn
  //    as Circle's upgrades did. Its EIP-712 domain is initializeV2's name with the fixed version "2".
  const signatureChecker = await deploy('SignatureChecker', signatureCheckerArtifact)
  const usdc = await build(
    'FiatTokenV2_2',
    { abi: fiatTokenV2_2Artifact.abi, bytecode: linkBytecode(fiatTokenV2_2Artifact, { [signatureCheckerName]: signatureChecker }) },
    [],
    preset?.usdc,
  )
  const usdcAbi = fiatTokenV2_2Artifact.abi
  const me = deployer.address
  await call(usdc, usdcAbi, 'initialize', ['USD Coin', 'USDC', 'USD', usdcDecimals, me, me, me, me])
  await call(usdc, usdcAbi, 'initializeV2', ['USD Coin'])
  await call(usdc, usdcAbi, 'initializeV2_1', [me])
  await call(usdc, usdcAbi, 'initializeV2_2', [[], 'USDC'])
  await call(usdc, usdcAbi, 'configureMinter', [me, maxUint256])

  // 2–3. WETH9 and Uniswap V3. The position manager's token descriptor only serves tokenURI,
  //      and SwapRouter02's V2 factory only V2 routes: neither is used here.
  const weth = await build('WETH9', weth9Artifact, [], preset?.weth)
  const factory = await build('UniswapV3Factory', uniswapV3FactoryArtifact, [], preset?.uniswap.factory)
  const positionManager = await deploy('NonfungiblePositionManager', nonfungiblePositionManagerArtifact, [
    factory,
    weth,
    zeroAddress,
  ])
  const swapRouter02 = await build('SwapRouter02', swapRouter02Artifact, [zeroAddress, factory, positionManager, weth], preset?.uniswap.swapRouter02)
  const quoterV2 = await build('QuoterV2', quoterV2Artifact, [factory, weth], preset?.uniswap.quoterV2)

  // 4. The USDC/WETH pool, then full-range liquidity from the deployer.
  const usdcIsToken0 = BigInt(usdc) < BigInt(weth)
  const [token0, token1] = usdcIsToken0 ? [usdc, weth] : [weth, usdc]
  const oneEth = parseEther('1')
  const sqrtPriceX96 = usdcIsToken0
    ? encodeSqrtPriceX96(ethPriceUsdc, oneEth)
    : encodeSqrtPriceX96(oneEth, ethPriceUsdc)
  const npmAbi = nonfungiblePositionManagerArtifact.abi
  await call(positionManager, npmAbi, 'createAndInitializePoolIfNecessary', [token0, token1, poolFee, sqrtPriceX96])
  const usdcWethPool = (await client.readContract({
    address: factory,
    abi: uniswapV3FactoryArtifact.abi,
    functionName: 'getPool',
    args: [usdc, weth, poolFee],
  })) as Address
  // Room for a price history, as busy mainnet pools have: the relay prices at the lower of the spot
  // and the time-weighted price over 600 s, which a swap in one block cannot move; at one block a
  // second (preflight's floor) that is 600 observations, so that a burst of swaps cannot flush it.
  // Before the liquidity: the mint writes an observation, and with a ring of one it would overwrite
  // the pool's first (whose zero cumulatives tell the relay the history is whole).
  await call(usdcWethPool, uniswapV3PoolAbi, 'increaseObservationCardinalityNext', [PRICE_WINDOW_SEC])

  await call(weth, weth9Artifact.abi, 'deposit', [], liquidity.weth)
  await call(usdc, usdcAbi, 'mint', [me, liquidity.usdc])
  await call(usdc, usdcAbi, 'approve', [positionManager, liquidity.usdc])
  await call(weth, weth9Artifact.abi, 'approve', [positionManager, liquidity.weth])
  const fullRange = Math.floor(maxTick / tickSpacing) * tickSpacing
  await call(positionManager, npmAbi, 'mint', [
    {
      token0,
      token1,
      fee: poolFee,
      tickLower: -fullRange,
      tickUpper: fullRange,
      amount0Desired: usdcIsToken0 ? liquidity.usdc : liquidity.weth,
      amount1Desired: usdcIsToken0 ? liquidity.weth : liquidity.usdc,
      amount0Min: 0n,
      amount1Min: 0n,
      recipient: me,
      deadline: maxUint256,
    },
  ])

  // 5. The demo users' USDC.
  const demoAccounts = demoKeys.map((privateKey) => ({ address: privateKeyToAccount(privateKey).address, privateKey }))
  for (const { address } of demoAccounts) await call(usdc, usdcAbi, 'mint', [address, demoUsdc])

  // 6. On an OP-stack preset, the L1 fee oracle's stand-in.
  if (preset?.l1DataFee === 'op-stack') await testClient.setCode({ address: GAS_PRICE_ORACLE, bytecode: zeroGasPriceOracle })

  // 7. The Runner, operated by anvil #4, owned by the deployer.
  const operator = privateKeyToAccount(operatorKey)
  const runner = await deploy('Runner', runnerArtifact, [operator.address, me])
  // 7c. The payee that refunds, owned by the devnet's treasury (the last contract created: every address above stays where it was).
  const payeeVault = await deploy('PayeeVault', payeeVaultArtifact, [runner, DEVNET_TREASURY])

  // 7b. The no-ETH demo account's USDC (after the Runner, so every address above stays where it was).
  const noEthAccount = { address: privateKeyToAccount(noEthKey).address, privateKey: noEthKey }
  await call(usdc, usdcAbi, 'mint', [noEthAccount.address, demoUsdc])

  // 8. The chain's clock to now. startAnvil starts it in the past, so the pool has a history by now
  //    (its time-weighted price is what the relay checks the spot price against); the relay and its
  //    callers judge deadlines by the wall clock, which the chain must agree with from here on.
  const latest = await client.getBlock({ blockTag: 'latest' })
  const now = BigInt(Math.floor(Date.now() / 1000))
  if (latest.timestamp < now) {
    await testClient.setNextBlockTimestamp({ timestamp: now })
    await testClient.mine({ blocks: 1 })
  }

  const deployment: DevnetDeployment = {
    chainId,
    rpcUrl,
    deployer: { address: me, privateKey: deployerKey },
    usdc,
    weth,
    uniswap: { factory, positionManager, swapRouter02, quoterV2, usdcWethPool, usdcWethFee: poolFee },
    demoAccounts,
    noEthAccount,
    runner: { contract: runner, operator: { address: operator.address, privateKey: operatorKey }, lanes: [] },
    payeeVault,
    ...(options.as ? { preset: options.as } : {}),
  }
  // 9. What the built-in groups deploy for themselves (their `devnet` hooks: the delegates accounts use).
  await (await loadBuiltinGroups()).deployBuiltinGroups(deployment)

  // 10. The runner's further lanes: funded, and allowed by the Runner's owner (last: every address above stays where it was).
  for (let index = 0; index < (options.lanes ?? 0); index++) {
    const lane = mnemonicToAccount(ANVIL_MNEMONIC, { accountIndex: 1, addressIndex: index })
    await testClient.setBalance({ address: lane.address, value: parseEther('10000') })
    await call(runner, runnerArtifact.abi, 'setOperator', [lane.address, true])
    deployment.runner.lanes.push({ address: lane.address, privateKey: toHex(lane.getHdKey().privateKey!) })
  }
  return deployment
}

/** anvil's default mnemonic: its accounts m/44'/60'/0'/0/0–9 are the funded dev accounts. */
const ANVIL_MNEMONIC = 'test test test test test test test test test test test junk'

// A Uniswap V3 price is token1 per token0 in raw units, stored as √price in Q64.96; shifting
// before the root keeps full precision (√(a·2¹⁹²) = √a·2⁹⁶).
function encodeSqrtPriceX96(amount0: bigint, amount1: bigint): bigint {
  return sqrt((amount1 << 192n) / amount0)
}

// Integer square root by Newton's method: the largest r with r² ≤ n.
function sqrt(n: bigint): bigint {
  if (n < 2n) return n
  let x = n
  let y = (x + 1n) / 2n
  while (y < x) {
    x = y
    y = (x + n / x) / 2n
  }
  return x
}
