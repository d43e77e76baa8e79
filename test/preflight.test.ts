import { execFile } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { createPublicClient, createTestClient, createWalletClient, getAddress, http, parseEther, toHex, type Address, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { devnetChain } from '../core/devnet/chain.ts'
import { caliburCompatibleArtifact, payeeVaultArtifact, runnerArtifact } from '../contracts/artifacts.ts'
import { DEVNET_TREASURY, devnetConfig } from '../config/devnet.ts'
import { startAnvil } from '../core/devnet/anvil.ts'
import { deployDevnet } from '../core/devnet/deploy.ts'
import { uniswapV3PoolAbi } from '../core/chain/tokenPrice.ts'
import { creationRuntime } from '../core/preflight/creationRuntime.ts'
import { preflightCommand } from '../core/commands/preflight.ts'
import { preflight } from '../core/preflight/preflight.ts'
import { groupChecks } from '../core/tool/groupPlugin.ts'
import { loadGroups } from '../config/loadGroups.ts'
import { builtinGroups } from '../plugins/index.ts'
import { metaMaskContracts, paymentFirstEnforcer } from '../plugins/metamask/contracts.ts'
import { spawnOwned } from './fixtures/ownedProcess.ts'
import { CALIBUR_ADDRESS } from '../plugins/calibur/networkOptions.ts'

// Preflight on a real devnet: green as deployed, and red — naming the check — when the Runner's or
// Calibur's code is removed or the runner has no ETH. Then the CLI: exit codes, and serve refusing
// to start on a failing chain unless told to skip it. No output may carry the RPC URL.

const anvil = await startAnvil()
t.teardown(() => anvil.stop())
const deployment = await deployDevnet(anvil.rpcUrl)
const env: NodeJS.ProcessEnv = { ...process.env }
const config = devnetConfig(deployment, env, { port: 0 })
const groups = groupChecks(await loadGroups(config, builtinGroups, process.cwd()))
const chain = createTestClient({ mode: 'anvil', transport: http(anvil.rpcUrl) })
const runnerKey = deployment.runner.operator.privateKey

/** Runs `change`, then the test body, then puts the chain back as it was. */
async function withChange(change: () => Promise<unknown>, body: () => Promise<void>) {
  const snapshot = await chain.snapshot()
  await change()
  try {
    await body()
  } finally {
    await chain.revert({ id: snapshot })
  }
}

async function checks() {
  const [local] = await preflight(config, env, groups)
  return local!
}

t.test('the devnet as deployed passes every check', async (t) => {
  const local = await checks()
  t.ok(local.ok, JSON.stringify(local.checks.filter((check) => !check.ok)))
  t.same(
    local.checks.map((check) => check.name),
    ['runner key', 'chain id', 'uniswap', 'calibur', 'metamask', 'runner contract', 'payee', 'runner balance', 'token USDC', 'token WETH', 'weth', 'pool USDC→WETH 0.05%'],
  )
  const byName = Object.fromEntries(local.checks.map((check) => [check.name, check.detail]))
  t.match(byName.calibur, /^Calibur 1\.0\.0 at 0x000000005c84F8Fd50b21CAC312528A64437030e; a delegated account reports its own EIP-712 domain \(chain id 31337/)
  t.match(byName.metamask, /^DelegationManager 1 at 0xdb9B1e94B5b69Df7e401DDbedE43491141047dB3 \(chain id 31337\); the delegator 0x63c0c19a282a1B52b07dD5a65b58948A07DAE32B/)
  t.match(byName['runner contract'], deployment.runner.operator.address)
  t.match(byName['token USDC'], /"USD Coin", 6 decimals, EIP-712 domain "USD Coin" version "2"/)
  t.match(byName['token WETH'], /no EIP-3009 domain/)
  t.equal(byName.weth, `WETH (18 decimals) at ${deployment.weth}, where the swap paths of USDC end`)
  t.match(byName.payee, `${deployment.payeeVault} is this Runner's PayeeVault`)
})

t.test('"payee": this Runner\'s PayeeVault refunds; another Runner\'s vault fails; other code keeps payments whole', async (t) => {
  const payeeCheck = async (payee: string) => {
    const [local] = await preflight({ ...config, networks: [{ ...config.networks[0]!, payee }] }, env, groups)
    return local!.checks.find((check) => check.name === 'payee')!
  }
  t.same(await payeeCheck(deployment.payeeVault), {
    name: 'payee',
    ok: true,
    detail: `${deployment.payeeVault} is this Runner's PayeeVault (owner 0xa0Ee7A142d267C1f36714E4a8F75612F20a79720): each relay refunds what it did not cost, the vault keeps 5 % over cost`,
  })
  // The same vault's code, built for another Runner.
  const elsewhere = getAddress('0x00000000000000000000000000000000000fa11d')
  const otherRunner: Address = '0x000000000000000000000000000000000000bEEF'
  const code = await creationRuntime(createPublicClient({ transport: http(anvil.rpcUrl) }), payeeVaultArtifact, [otherRunner, '0xa0Ee7A142d267C1f36714E4a8F75612F20a79720'])
  await withChange(
    () => chain.setCode({ address: elsewhere, bytecode: code! }),
    async () => {
      const check = await payeeCheck(elsewhere)
      t.equal(check.ok, false)
      t.equal(check.detail, `${elsewhere} is the PayeeVault of Runner ${otherRunner}, not of runner.contract ${deployment.runner.contract}: it would refund nothing and keep every payment; deploy this Runner's vault (bruno deploy --treasury)`)
    },
  )
  t.same(await payeeCheck(deployment.usdc), { name: 'payee', ok: true, detail: `${deployment.usdc} is a contract, not a PayeeVault: payments are kept whole, nothing is refunded` })
  t.same(await payeeCheck(DEVNET_TREASURY), {
    name: 'payee',
    ok: true,
    detail: `${DEVNET_TREASURY} is an account: payments are kept whole, nothing is refunded (a PayeeVault refunds what a relay did not cost: bruno deploy --treasury)`,
  })
})

t.test('a configured weth that is not WETH fails "weth", naming what it is (issue 28, point 1)', async (t) => {
  const [local] = await preflight({ ...config, networks: [{ ...config.networks[0]!, weth: deployment.usdc }] }, env, groups)
  const weth = local!.checks.find((check) => check.name === 'weth')!
  t.equal(weth.ok, false)
  t.equal(weth.detail, `${deployment.usdc} is not WETH: its symbol() is "USDC" and decimals() 6; every swap path must end at the chain's wrapped ether`)
  const [nowhere] = await preflight({ ...config, networks: [{ ...config.networks[0]!, weth: '0x000000000000000000000000000000000000dEaD' }] }, env, groups)
  t.same(nowhere!.checks.find((check) => check.name === 'weth'), { name: 'weth', ok: false, detail: 'no code at weth 0x000000000000000000000000000000000000dEaD' })
})

t.test('a pool whose price ring cannot hold the 600 s window at the chain\'s block time fails "pool", naming the fix', async (t) => {
  const pool = deployment.uniswap.usdcWethPool
  const client = createPublicClient({ transport: http(anvil.rpcUrl) })
  const detail = async () => (await checks()).checks.find((check) => check.name === 'pool USDC→WETH 0.05%')!
  const deployed = await detail()
  t.equal(deployed.ok, true, deployed.detail)
  t.match(deployed.detail, /, 600 price observations \(\d+ needed at \d+ s a block\), the oldest \d{4} s old$/, 'as deployed: a ring of 600, the pool an hour old')
  const slot0 = BigInt((await client.getStorageAt({ address: pool, slot: '0x0' }))!)
  const [, , index] = await client.readContract({ address: pool, abi: uniswapV3PoolAbi, functionName: 'slot0' })
  await withChange(
    async () => {
      await chain.setStorageAt({ address: pool, index: '0x0', value: withRing(slot0, BigInt(index), 64n, 64n) })
      // A hundred blocks a second apart: the span over which preflight measures the cadence.
      await chain.mine({ blocks: 100, interval: 1 })
    },
    async () => {
      const check = await detail()
      t.equal(check.ok, false, 'a ring of 64 at one block a second')
      t.equal(
        check.detail,
        `the pool at ${pool} keeps 64 price observations; at 1 s a block its 600 s price window needs 600: call its increaseObservationCardinalityNext(600) (anyone may, paying the gas)`,
      )
      // The same ring on a chain of 12-second blocks covers the window.
      await chain.mine({ blocks: 100, interval: 12 })
      const slow = await detail()
      t.equal(slow.ok, true, slow.detail)
      t.match(slow.detail, /64 price observations \(50 needed at 12 s a block\)/)
    },
  )
})

t.test('a pool whose price history does not reach back the 600 s window fails "pool": young, or its ring overwritten (issue 28, point 8)', async (t) => {
  const pool = deployment.uniswap.usdcWethPool
  const client = createPublicClient({ transport: http(anvil.rpcUrl) })
  const detail = async () => (await checks()).checks.find((check) => check.name === 'pool USDC→WETH 0.05%')!
  const slot0 = BigInt((await client.getStorageAt({ address: pool, slot: '0x0' }))!)
  const ringOf = (index: bigint, size: bigint, next: bigint) => withRing(slot0, index, size, next)
  // A hundred blocks a second apart: the span over which preflight measures the cadence, so that the ring a window needs is 600.
  await withChange(
    () => chain.mine({ blocks: 100, interval: 1 }),
    async () => {
      const now = (await client.getBlock({ blockTag: 'latest' })).timestamp
      // The pool's first observation (zero cumulatives), written 100 s ago: a pool created then.
      await withChange(
        () => Promise.all([chain.setStorageAt({ address: pool, index: '0x0', value: ringOf(0n, 1n, 600n) }), chain.setStorageAt({ address: pool, index: toHex(8, { size: 32 }), value: observation(now - 100n, 0n) })]),
        async () => {
          const check = await detail()
          t.equal(check.ok, false, 'a pool 100 s old')
          t.equal(check.detail, `the pool at ${pool} is 100 s old, younger than the 600 s price window: its price would be averaged over less; serve it in 500 s`)
        },
      )
      // The same observation with cumulatives written: the ring of one was overwritten by a swap 100 s ago.
      await withChange(
        () => Promise.all([chain.setStorageAt({ address: pool, index: '0x0', value: ringOf(0n, 1n, 1n) }), chain.setStorageAt({ address: pool, index: toHex(8, { size: 32 }), value: observation(now - 100n, 123_456n) })]),
        async () => {
          const check = await detail()
          t.equal(check.ok, false, 'a ring of one, overwritten 100 s ago')
          t.equal(
            check.detail,
            `the oldest price observation the pool at ${pool} keeps is 100 s old, younger than the 600 s price window: swaps overwrote its ring of 1; ` +
              'call its increaseObservationCardinalityNext(600) (anyone may, paying the gas), then wait for the ring to fill',
          )
          // Its ring already raised (the size the next writes grow it to): only the wait is left.
          await chain.setStorageAt({ address: pool, index: '0x0', value: ringOf(0n, 1n, 600n) })
          t.equal((await detail()).detail, `the oldest price observation the pool at ${pool} keeps is 100 s old, younger than the 600 s price window: swaps overwrote its ring of 1; wait for its ring of 600 to fill`)
        },
      )
      // Overwritten, but 700 s ago, with no swap since: the pool's price has held that long, and the window is whole.
      await withChange(
        () => Promise.all([chain.setStorageAt({ address: pool, index: '0x0', value: ringOf(0n, 1n, 600n) }), chain.setStorageAt({ address: pool, index: toHex(8, { size: 32 }), value: observation(now - 700n, 123_456n) })]),
        async () => {
          const check = await detail()
          t.equal(check.ok, true, check.detail)
          t.match(check.detail, /, the oldest 700 s old$/)
        },
      )
    },
  )
})

/** The pool's slot0 word with its ring replaced: the last written index (bits 184-199), the ring's size (200-215) and the size it grows to (216-231). */
function withRing(slot0: bigint, index: bigint, size: bigint, next: bigint): Hex {
  return word((slot0 & ~(((1n << 48n) - 1n) << 184n)) | (index << 184n) | (size << 200n) | (next << 216n))
}

/** An observation's storage word (one slot each from slot 8): timestamp (bits 0-31), tickCumulative (32-87), initialized (bit 248). */
function observation(timestamp: bigint, tickCumulative: bigint): Hex {
  return word(timestamp | (BigInt.asUintN(56, tickCumulative) << 32n) | (1n << 248n))
}

/** A storage word as `setStorageAt` takes it. */
function word(value: bigint): Hex {
  return `0x${value.toString(16).padStart(64, '0')}`
}

t.test('no Runner code: "runner contract" fails', async (t) => {
  await withChange(
    () => chain.setCode({ address: deployment.runner.contract, bytecode: '0x' }),
    async () => {
      const local = await checks()
      t.notOk(local.ok)
      t.same(local.checks.filter((check) => !check.ok).map((check) => check.name), ['runner contract'])
      t.match(local.checks.find((check) => check.name === 'runner contract')!.detail, /no code at runner\.contract/)
    },
  )
})

t.test('runner.lanes: each further lane must be an operator of the Runner and hold the floor', async (t) => {
  const key = generatePrivateKey()
  const lane = privateKeyToAccount(key).address
  const laneEnv = { ...env, TEST_LANE_1: key }
  const [network] = config.networks
  const withLanes = { ...config, networks: [{ ...network!, runner: { ...network!.runner, lanes: [{ env: 'TEST_LANE_1' }] } }] }
  const laneCheck = async () => (await preflight(withLanes, laneEnv, groups))[0]!.checks.find((check) => check.name === 'runner lanes')
  const contract = getAddress(deployment.runner.contract)
  t.match(await laneCheck(), {
    ok: false,
    detail: `${lane} is not an operator of ${contract} (its owner allows it: setOperator(${lane}, true)); ${lane} holds 0 ETH, under the floor 0.01 ETH`,
  })
  t.notOk((await checks()).checks.some((check) => check.name === 'runner lanes'), 'no lanes configured: no such check')
  const owner = createWalletClient({ account: privateKeyToAccount(deployment.deployer.privateKey), transport: http(anvil.rpcUrl), chain: devnetChain() })
  await withChange(
    async () => {
      await chain.setBalance({ address: lane, value: parseEther('1') })
      const hash = await owner.writeContract({ address: contract, abi: runnerArtifact.abi, functionName: 'setOperator', args: [lane, true] })
      await createPublicClient({ transport: http(anvil.rpcUrl) }).waitForTransactionReceipt({ hash })
    },
    async () => {
      t.match(await laneCheck(), { ok: true, detail: `1 further lane(s), each an operator of ${contract}, the poorest holding 1 ETH (floor 0.01 ETH)` })
    },
  )
})

t.test('a Runner for another operator: "runner contract" names the operator', async (t) => {
  const other = privateKeyToAccount(generatePrivateKey())
  const code = await creationRuntime(createPublicClient({ transport: http(anvil.rpcUrl) }), runnerArtifact, [other.address, other.address])
  await withChange(
    () => chain.setCode({ address: deployment.runner.contract, bytecode: code! }),
    async () => {
      const local = await checks()
      t.match(local.checks.find((check) => check.name === 'runner contract'), { ok: false, detail: new RegExp(`operator\\(\\) is ${other.address}`) })
    },
  )
})

t.test('no code at Calibur\'s address: "calibur" fails', async (t) => {
  await withChange(
    () => chain.setCode({ address: CALIBUR_ADDRESS, bytecode: '0x' }),
    async () => {
      const local = await checks()
      t.same(local.checks.filter((check) => !check.ok).map((check) => check.name), ['calibur'])
      t.match(local.checks.find((check) => check.name === 'calibur')!.detail, /no code at 0x000000005c84F8Fd50b21CAC312528A64437030e/)
    },
  )
})

// Calibur is recognised by what it does, not by its bytes: the real contract's code is not ours.
t.test('"metamask" fails without MetaMask\'s contracts, or with a delegator that names another manager: a group\'s own preflight hook', async (t) => {
  await withChange(
    () => chain.setCode({ address: metaMaskContracts.delegator, bytecode: '0x' }),
    async () => {
      const local = await checks()
      t.same(local.checks.filter((check) => !check.ok).map((check) => check.name), ['metamask'])
      t.match(local.checks.find((check) => check.name === 'metamask')!.detail, /^no code at delegator 0x63c0c19a282a1B52b07dD5a65b58948A07DAE32B: MetaMask's delegation framework v1\.3\.0 is not deployed on this chain$/)
    },
  )
  await withChange(
    () => chain.setCode({ address: paymentFirstEnforcer, bytecode: '0x' }),
    async () => {
      const local = await checks()
      t.same(local.checks.filter((check) => !check.ok).map((check) => check.name), ['metamask'])
      t.equal(
        local.checks.find((check) => check.name === 'metamask')!.detail,
        `no code at ${paymentFirstEnforcer} where it belongs: Bruno's PaymentFirstEnforcer, the caveat of every payment-first delegation: deploy it with bruno deploy --metamask`,
      )
    },
  )
  await withChange(
    () => chain.setCode({ address: paymentFirstEnforcer, bytecode: caliburCompatibleArtifact.deployedBytecode }),
    async () => {
      const local = await checks()
      t.match(local.checks.find((check) => check.name === 'metamask')!.detail, /^the code at 0x[0-9a-fA-F]{40} is not Bruno's PaymentFirstEnforcer/)
    },
  )
  await withChange(
    () => chain.setCode({ address: metaMaskContracts.delegator, bytecode: caliburCompatibleArtifact.deployedBytecode }),
    async () => {
      const local = await checks()
      t.match(local.checks.find((check) => check.name === 'metamask')!.detail, /the delegator 0x63c0c19a282a1B52b07dD5a65b58948A07DAE32B names no DelegationManager/)
    },
  )
  // A config that does not serve the group does not check it.
  const [withoutGroup] = await preflight(config, env, groupChecks(await loadGroups({ ...config, groups: ['bruno', 'calibur'] }, builtinGroups, process.cwd())))
  t.notOk(withoutGroup!.checks.some((check) => check.name === 'metamask'))
})

t.test('"calibur": other code that behaves as Calibur passes, here on anvil\'s chain id too', async (t) => {
  const code = await createPublicClient({ transport: http(anvil.rpcUrl) }).getCode({ address: CALIBUR_ADDRESS })
  // The stand-in's runtime with bytes appended after its metadata: never reached, so the same
  // behaviour in other code (the old check, comparing bytes on chain id 31337, refused it).
  const other = `${code!}00c0ffee` as const
  await withChange(
    () => chain.setCode({ address: CALIBUR_ADDRESS, bytecode: other }),
    async () => {
      const local = await checks()
      t.ok(local.ok, JSON.stringify(local.checks.filter((check) => !check.ok)))
      t.match(local.checks.find((check) => check.name === 'calibur')!.detail, /^Calibur 1\.0\.0 at /)
    },
  )
})

t.test('"calibur": a delegate that names itself Calibur 1.0.0 but signs under another salt fails, naming the salt', async (t) => {
  const client = createPublicClient({ transport: http(anvil.rpcUrl) })
  // Our delegate built for another address: eip712Domain() still says Calibur 1.0.0, but an account
  // delegated to it reports a salt that is not Calibur's address (wallets would sign for another delegate).
  const elsewhere = await creationRuntime(client, caliburCompatibleArtifact, ['0x00000000000000000000000000000000000ca11b'])
  await withChange(
    () => chain.setCode({ address: CALIBUR_ADDRESS, bytecode: elsewhere! }),
    async () => {
      const local = await checks()
      t.same(local.checks.filter((check) => !check.ok).map((check) => check.name), ['calibur'])
      t.match(local.checks.find((check) => check.name === 'calibur')!.detail, /reports an EIP-712 domain that is not Calibur's: salt 0x0{24}0{35}ca11b, not Calibur's address$/)
    },
  )
})

t.test('"calibur" checks Calibur where the group\'s option on the chain puts it, not at the default', async (t) => {
  const moved = getAddress('0x00000000000000000000000000000000000ca11b')
  const runtime = await creationRuntime(createPublicClient({ transport: http(anvil.rpcUrl) }), caliburCompatibleArtifact, [moved])
  const movedConfig = { ...config, networks: [{ ...config.networks[0]!, groupOptions: { calibur: { address: moved } } }] }
  const movedChecks = groupChecks(await loadGroups(movedConfig, builtinGroups, process.cwd()))
  await withChange(
    async () => {
      await chain.setCode({ address: moved, bytecode: runtime! })
      await chain.setCode({ address: CALIBUR_ADDRESS, bytecode: '0x' })
    },
    async () => {
      const [local] = await preflight(movedConfig, env, movedChecks)
      t.ok(local!.ok, JSON.stringify(local!.checks.filter((check) => !check.ok)))
      t.match(local!.checks.find((check) => check.name === 'calibur')!.detail, `Calibur 1.0.0 at ${moved}; a delegated account reports`)
      const defaulted = await checks()
      t.match(defaulted.checks.find((check) => check.name === 'calibur')!.detail, `no code at ${CALIBUR_ADDRESS}`, 'without the option: the default address')
    },
  )
})

t.test('"calibur": code that does not answer eip712Domain() fails', async (t) => {
  const weth = await createPublicClient({ transport: http(anvil.rpcUrl) }).getCode({ address: deployment.weth })
  await withChange(
    () => chain.setCode({ address: CALIBUR_ADDRESS, bytecode: weth! }),
    async () => {
      const local = await checks()
      t.same(local.checks.filter((check) => !check.ok).map((check) => check.name), ['calibur'])
      t.match(local.checks.find((check) => check.name === 'calibur')!.detail, /does not answer ERC-5267 eip712Domain\(\): it is not Calibur/)
    },
  )
})

t.test('an unfunded runner: "runner balance" fails, naming the floor', async (t) => {
  await withChange(
    () => chain.setBalance({ address: deployment.runner.operator.address, value: 0n }),
    async () => {
      const local = await checks()
      t.same(local.checks.filter((check) => !check.ok).map((check) => check.name), ['runner balance'])
      t.match(local.checks.find((check) => check.name === 'runner balance')!.detail, /^0 ETH at .* \(floor 0\.01 ETH, runner\.minBalanceWei\)/)
    },
  )
  await withChange(
    () => chain.setBalance({ address: deployment.runner.operator.address, value: parseEther('0.01') }),
    async () => {
      t.ok((await checks()).ok, 'exactly the floor passes')
    },
  )
})

t.test('the wrong chain id: only "chain id" is reported after the runner key (read without the chain)', async (t) => {
  const [local] = await preflight({ ...config, networks: [{ ...config.networks[0]!, chainId: 8453 }] }, env, groups)
  t.same(local!.checks.slice(1), [{ name: 'chain id', ok: false, detail: 'the RPC answers chain id 31337, the config says 8453' }])
  t.match(local!.checks[0], { name: 'runner key', ok: true })
})

t.test('an unset runner key is reported once, as "runner key", not by each check that needs it (issue 49, point 8)', async (t) => {
  const keyEnv = config.networks[0]!.runner.key.env
  const [local] = await preflight(config, { ...env, [keyEnv]: undefined }, groups)
  const failed = local!.checks.filter((check) => !check.ok)
  t.same(failed, [{ name: 'runner key', ok: false, detail: `environment variable ${keyEnv} is not set: it must hold the runner's private key (0x + 64 hex)` }])
  t.notOk(local!.checks.some((check) => check.name === 'runner contract' || check.name === 'runner balance'), 'the checks that need its address are left out')
})

// The CLI, as an operator runs it: a config file naming environment variables.
const configDir = await mkdtemp(join(tmpdir(), 'bruno-preflight-'))
t.teardown(() => rm(configDir, { recursive: true, force: true }))
const configFile = join(configDir, 'bruno.json')
await writeFile(configFile, JSON.stringify(config))
const cli = ['--import=tsx', join(import.meta.dirname, '../core/cli.ts')]
const run = promisify(execFile)
const cliEnv = { ...process.env, BRUNO_DEVNET_RPC_URL: anvil.rpcUrl, BRUNO_DEVNET_RUNNER_KEY: runnerKey }

async function brunoCli(...args: string[]) {
  try {
    const { stdout, stderr } = await run(process.execPath, [...cli, ...args], { env: cliEnv, cwd: join(import.meta.dirname, '..') })
    return { code: 0, stdout, stderr }
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string }
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr }
  }
}

/** `bruno preflight …` in this process, through the command cli.ts runs: its exit code and output. */
async function preflightInProcess(...args: string[]) {
  let stdout = ''
  let stderr = ''
  const code = await preflightCommand.run(args, { env: cliEnv, stdout: { write: (text: string) => (stdout += text) }, stderr: { write: (text: string) => (stderr += text) } })
  return { code, stdout, stderr }
}

t.test('bruno preflight: exit 0 and every check named; exit 1 naming the failure', async (t) => {
  // As a process once: the command's exit code is the process's.
  const green = await brunoCli('preflight', '--config', configFile)
  t.equal(green.code, 0, green.stderr)
  t.match(green.stdout, /local \(chainId 31337\): ok/)
  t.match(green.stdout, /\[pass\] runner contract: /)
  await withChange(
    () => chain.setBalance({ address: deployment.runner.operator.address, value: 0n }),
    async () => {
      const red = await preflightInProcess('--config', configFile)
      t.equal(red.code, 1)
      t.match(red.stdout, /\[FAIL\] runner balance: 0 ETH/)
      for (const output of [green.stdout, green.stderr, red.stdout, red.stderr]) {
        t.notOk(output.includes(anvil.rpcUrl), 'no RPC URL in the output')
        t.notOk(output.includes(runnerKey.slice(2)), 'no runner key in the output')
      }
    },
  )
  t.match((await preflightInProcess('--help')).stdout, /--config[\s\S]*--chain[\s\S]*--help/)
})

t.test('bruno serve refuses a failing chain, and serves it with --skip-preflight', async (t) => {
  await withChange(
    () => chain.setCode({ address: deployment.runner.contract, bytecode: '0x' }),
    async () => {
      const refused = await brunoCli('--config', configFile)
      t.equal(refused.code, 1)
      t.match(refused.stderr, /\[FAIL\] runner contract: no code/)
      t.match(refused.stderr, /Bruno did not start/)
      t.notOk(refused.stderr.includes(anvil.rpcUrl))

      const served = spawnOwned(t, process.execPath, [...cli, '--config', configFile, '--skip-preflight', 'local'], { env: cliEnv, cwd: join(import.meta.dirname, '..') })
      let stdout = ''
      let stderr = ''
      served.stderr.on('data', (chunk) => (stderr += chunk))
      const serving = await new Promise<boolean>((resolve) => {
        served.stdout.on('data', (chunk) => {
          stdout += chunk
          if (stdout.includes('Bruno is serving')) resolve(true)
        })
        served.once('exit', () => resolve(false))
      })
      const exited = new Promise((resolve) => served.once('exit', resolve))
      served.kill('SIGTERM')
      await exited
      t.ok(serving, `served despite the failing check: ${stderr.slice(-500)}`)
      t.match(stderr, /"check":"runner contract".*served anyway/)
      t.notOk(stderr.includes(anvil.rpcUrl), 'no RPC URL in the logs')
    },
  )
})
