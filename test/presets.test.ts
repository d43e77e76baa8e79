import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { createPublicClient, encodeFunctionData, erc20Abi, getAddress, http, parseSignature, type Address } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { DEVNET_RPC_ENV, DEVNET_RUNNER_KEY_ENV, devnetConfig } from '../config/devnet.ts'
import { ConfigError, parseConfig } from '../config/load.ts'
import { PRESET_NAMES, PRESETS, type NetworkPreset, type PresetName } from '../config/presets.ts'
import { GAS_PRICE_ORACLE } from '../core/chain/l1DataFee.ts'
import { preflightCommand } from '../core/commands/preflight.ts'
import { checkServeFlags, FlagError } from '../core/commands/serveFlags.ts'
import { startAnvil } from '../core/devnet/anvil.ts'
import { deployDevnet } from '../core/devnet/deploy.ts'
import { mintUsdc } from '../core/devnet/fund.ts'
import { eip3009Abi } from '../plugins/3009/abi.ts'
import { startBruno } from './fixtures/bruno.ts'
import { RawMcpClient } from './fixtures/mcpHttp.ts'
import { spawnOwned } from './fixtures/ownedProcess.ts'
import { signTransfer } from './fixtures/signedTransfer.ts'
import { waitFor } from './fixtures/waitFor.ts'
import { devnetPricing, ledgerViolations, runnerLedger } from '../core/testing/runnerLedger.ts'
import { CALIBUR_ADDRESS } from '../plugins/calibur/networkOptions.ts'

// Network presets: `"preset"` fills a network entry (what the entry gives wins), and a devnet that
// takes a preset's identity (`--as`: the preset's chain id, the real contracts at the preset's
// addresses) is served by a config naming only the preset, the RPC URL, the payee and the Runner:
// preflight passes on it and flow 2 ends `done`, for Base (OP-stack: its L1 data fee read from the
// GasPriceOracle predeploy) and Ethereum.

const env = { BRUNO_TEST_RPC_URL: 'http://127.0.0.1:9/never', BRUNO_TEST_RUNNER_KEY: '0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba' }
const runner = { contract: '0x0000000000000000000000000000000000000B0B', key: { env: 'BRUNO_TEST_RUNNER_KEY' } }
const payee = '0xa0Ee7A142d267C1f36714E4a8F75612F20a79720'
const withNetwork = (network: Record<string, unknown>) => parseConfig({ networks: [{ rpcUrl: { env: 'BRUNO_TEST_RPC_URL' }, payee, runner, ...network }] }, env)

t.test('a preset fills the entry: only the RPC URL, the payee and the Runner are given', async (t) => {
  const [base] = withNetwork({ preset: 'base' }).networks
  t.match(base, {
    preset: 'base',
    name: 'base',
    chainId: 8453,
    weth: '0x4200000000000000000000000000000000000006',
    tokens: [
      { symbol: 'USDC', address: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913', decimals: 6, swapPath: [{ fee: 500, tokenOut: '0x4200000000000000000000000000000000000006' }] },
      { symbol: 'WETH', address: '0x4200000000000000000000000000000000000006', decimals: 18 },
    ],
    uniswap: { factory: '0x33128a8fC17869897dcE68Ed026d694621f6FDfD', swapRouter02: '0x2626664c2603336E57B271c5C0b26F421741e481', quoterV2: '0x3d4e44Eb1374240CE5F1B871ab261CD16335B76a' },
    l1DataFee: 'op-stack',
    payee,
    runner,
  })
  const [ethereum] = withNetwork({ preset: 'ethereum' }).networks
  t.equal(ethereum!.chainId, 1)
  t.equal(ethereum!.l1DataFee, undefined, 'Ethereum charges no L1 data fee')
  t.equal(ethereum!.tokens[0]!.address, '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48')

  for (const name of PRESET_NAMES) {
    const [network] = withNetwork({ preset: name }).networks
    t.equal(network!.chainId, PRESETS[name].chainId, `${name}: a whole, valid entry`)
    for (const address of [network!.weth, ...network!.tokens.map((token) => token.address), ...Object.values(network!.uniswap)]) {
      t.equal(getAddress(address), address, `${name}: ${address} is EIP-55 checksummed`)
    }
  }
  t.equal(new Set(PRESET_NAMES.map((name) => PRESETS[name].chainId)).size, PRESET_NAMES.length, 'one chain id per preset')
})

t.test('what the entry gives overrides the preset: objects key by key, arrays whole', async (t) => {
  const quoter = '0x0000000000000000000000000000000000000abc'
  const [network] = withNetwork({ preset: 'arbitrum', name: 'arb', uniswap: { quoterV2: quoter }, maxBlockAgeSec: 5 }).networks
  t.equal(network!.name, 'arb')
  t.equal(network!.uniswap.quoterV2, quoter, 'the given QuoterV2 (all lowercase: no checksum to verify)')
  t.equal(network!.uniswap.factory, PRESETS.arbitrum.uniswap.factory, 'the preset\'s factory beside it')
  t.equal(network!.maxBlockAgeSec, 5)
  const tokens = [{ symbol: 'WETH', address: PRESETS.arbitrum.weth, decimals: 18 }]
  t.same(withNetwork({ preset: 'arbitrum', tokens }).networks[0]!.tokens, tokens, 'a tokens array replaces the preset\'s list')
  t.same(
    parseConfig({ networks: ['base', 'optimism'].map((preset) => ({ preset, rpcUrl: { env: 'BRUNO_TEST_RPC_URL' }, payee, runner })) }, env).networks.map((network) => network.name),
    ['base', 'optimism'],
    'two presets, two networks',
  )
})

t.test('a preset refuses what it cannot be: another chain id, a name no preset has', async (t) => {
  t.throws(
    () => withNetwork({ preset: 'base', chainId: 10 }),
    new ConfigError(
      'config networks[0].chainId: the preset "base" is Base, chain id 8453, and its addresses are that chain\'s: leave chainId out, or leave the preset out and give every address',
    ),
  )
  t.throws(() => withNetwork({ preset: 'bsae' }), new ConfigError('config networks[0].preset: no preset is named "bsae"; did you mean "base"?'))
  t.throws(() => withNetwork({ preset: 'polygon' }), new ConfigError(`config networks[0].preset: no preset is named "polygon"; presets: ${PRESET_NAMES.map((name) => `"${name}"`).join(', ')}`))
  t.throws(() => withNetwork({ name: 'x', chainId: 5 }), { name: 'ConfigError', message: /^config networks\[0\]\.weth: Expected required property \(give it, or "preset": one of ethereum, base, / }, 'an entry without a preset is told one would fill it')
})

// The devnet as each preset: what `npm start -- --as <preset>` serves.
async function presetDevnet(t: Test, as: PresetName) {
  const anvil = await startAnvil({ chainId: PRESETS[as].chainId })
  const deployment = await deployDevnet(anvil.rpcUrl, { as })
  t.teardown(async () => {
    const violations = ledgerViolations(await runnerLedger(anvil.rpcUrl, deployment.runner.operator.address, devnetPricing(deployment)))
    await anvil.stop()
    if (violations.length > 0) throw new Error(`runner ledger: ${violations.join('; ')}`)
  })
  return { anvil, deployment }
}

for (const as of ['base', 'ethereum'] as const) {
  t.test(`the devnet as ${PRESETS[as].title}: a config with only the preset passes preflight, and flow 2 ends done`, async (t) => {
    const { anvil, deployment } = await presetDevnet(t, as)
    const preset: NetworkPreset = PRESETS[as]
    t.equal(deployment.chainId, preset.chainId)
    const client = createPublicClient({ transport: http(anvil.rpcUrl) })
    for (const address of [preset.usdc, preset.weth, preset.uniswap.factory, preset.uniswap.swapRouter02, preset.uniswap.quoterV2, CALIBUR_ADDRESS]) {
      t.ok(((await client.getCode({ address })) ?? '0x').length > 2, `code at the preset's ${address}`)
    }
    t.equal(await client.readContract({ address: preset.usdc, abi: erc20Abi, functionName: 'symbol' }), 'USDC', 'USDC at USDC\'s address')
    const oracle = await client.getCode({ address: GAS_PRICE_ORACLE })
    t.equal(oracle !== undefined, preset.l1DataFee === 'op-stack', 'a GasPriceOracle where the preset prices an L1 data fee, none elsewhere')

    // The config an operator writes for that chain, as a file.
    const payeeAddress = privateKeyToAccount(generatePrivateKey()).address
    const file = { store: { path: ':memory:' }, groups: ['bruno', 'calibur', '3009'], networks: [{ preset: as, rpcUrl: { env: DEVNET_RPC_ENV }, payee: payeeAddress, maxBlockAgeSec: 0, runner: { contract: deployment.runner.contract, key: { env: DEVNET_RUNNER_KEY_ENV } } }] }
    const dir = await mkdtemp(join(tmpdir(), `bruno-preset-${as}-`))
    t.teardown(() => rm(dir, { recursive: true, force: true }))
    await writeFile(join(dir, 'bruno.json'), JSON.stringify(file))
    const brunoEnv: NodeJS.ProcessEnv = { ...process.env, [DEVNET_RPC_ENV]: anvil.rpcUrl, [DEVNET_RUNNER_KEY_ENV]: deployment.runner.operator.privateKey }
    let report = ''
    const code = await preflightCommand.run(['--config', join(dir, 'bruno.json')], { env: brunoEnv, stdout: { write: (text: string) => (report += text) }, stderr: { write: (text: string) => (report += text) } })
    t.equal(code, 0, report)
    t.match(report, new RegExp(`^${as} \\(chainId ${preset.chainId}\\): ok$`, 'm'))
    // Calibur is the calibur group's own check: the config serves the group, so preflight runs it.
    t.match(report, /\[pass\] calibur: Calibur 1\.0\.0 at 0x000000005c84F8Fd50b21CAC312528A64437030e/)
    t.match(report, new RegExp(`\\[pass\\] pool USDC→WETH 0\\.05%: ${deployment.uniswap.usdcWethPool}`))

    // devnetConfig gives the devnet the same config (and checks it names what was built).
    const config = devnetConfig(deployment, brunoEnv, { port: 0, groups: ['bruno', '3009'], payee: payeeAddress })
    t.same(config.networks[0]!.preset, as)
    t.equal(config.networks[0]!.l1DataFee, preset.l1DataFee)
    const bruno = await startBruno(t, config, brunoEnv, [anvil.rpcUrl])
    await flowTwo(t, bruno.server.url, new RawMcpClient(`${bruno.mcpUrl}/bruno,3009`), anvil.rpcUrl, deployment, as, payeeAddress)
  })
}

/** Flow 2 over REST (MCP for payment_authorization): a USDC-only account's signed transfer to a friend, paid by a signed transfer to the payee. */
async function flowTwo(t: Test, base: string, mcp: RawMcpClient, rpcUrl: string, deployment: Awaited<ReturnType<typeof deployDevnet>>, chain: string, payeeAddress: Address) {
  const client = createPublicClient({ transport: http(rpcUrl) })
  const token = { address: deployment.usdc, name: 'USD Coin', version: '2', chainId: deployment.chainId }
  const key = generatePrivateKey()
  const account = privateKeyToAccount(key)
  const friend = privateKeyToAccount(generatePrivateKey()).address
  await mintUsdc(rpcUrl, deployment, account.address, 50_000_000n)
  const gift = await signTransfer(key, token, friend, 10_000_000n)
  const { v, r, s } = parseSignature(gift.signature)
  const call = {
    to: deployment.usdc,
    data: encodeFunctionData({ abi: eip3009Abi, functionName: 'transferWithAuthorization', args: [account.address, friend, 10_000_000n, 0n, BigInt(gift.message.validBefore), gift.message.nonce, Number(v), r, s] }),
  }
  const post = async (path: string, body: unknown) => {
    const response = await fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
    return { status: response.status, json: (await response.json()) as any }
  }
  const quoted = await post(`/${chain}/v1/quote`, { call, token: 'USDC', payment: 'authorization' })
  t.equal(quoted.status, 200, JSON.stringify(quoted.json))
  t.equal(quoted.json.payee, payeeAddress)
  const prepared = await mcp.call('payment_authorization', { chain, from: account.address, token: 'USDC', amount: quoted.json.amount })
  t.same(prepared.typedData.domain, { name: 'USD Coin', version: '2', chainId: deployment.chainId, verifyingContract: deployment.usdc }, 'signed for the preset\'s chain and USDC address')
  const signature = await account.signTypedData(prepared.typedData)
  const accepted = await post(`/${chain}/v1/submit`, { call, payment: { ...prepared.payment, signature } })
  t.equal(accepted.status, 202, JSON.stringify(accepted.json))
  const status = await waitFor(
    async () => (await fetch(`${base}/${chain}/v1/status/${accepted.json.id}`)).json(),
    (status) => status.stage === 'done' || status.stage === 'failed',
    `submission ${accepted.json.id} settled`,
    30_000,
  )
  t.equal(status.stage, 'done', status.reason)
  t.equal(status.outcome?.callSucceeded, true)
  const balance = (address: Address) => client.readContract({ address: deployment.usdc, abi: erc20Abi, functionName: 'balanceOf', args: [address] })
  t.equal(await balance(friend), 10_000_000n, 'the call ran')
  t.equal(await balance(payeeAddress), BigInt(quoted.json.amountBaseUnits), 'the payee was paid')
}

t.test('bruno preflight --as optimism: the devnet as OP Mainnet passes every check', async (t) => {
  let report = ''
  const code = await preflightCommand.run(['--as', 'optimism'], { env: { ...process.env }, stdout: { write: (text: string) => (report += text) }, stderr: { write: (text: string) => (report += text) } })
  t.equal(code, 0, report)
  t.match(report, /^optimism \(chainId 10\): ok$/m)
  t.match(report, /\[pass\] token USDC: "USD Coin", 6 decimals/)
  let refusal = ''
  t.equal(await preflightCommand.run(['--as', 'optimsm'], { env: {}, stdout: { write: () => true }, stderr: { write: (text: string) => (refusal += text) } }), 2)
  t.match(refusal, /--as: no preset is named "optimsm"; did you mean "optimism"\?/)
})

t.test('npm start -- --as base: the CLI serves the devnet as Base; a preset it does not know is refused before anything starts', async (t) => {
  const cli = ['--import=tsx', join(import.meta.dirname, '../core/cli.ts')]
  const served = spawnOwned(t, process.execPath, [...cli, '--as', 'base', '--port', '0', '--log-level', 'warn'], { cwd: join(import.meta.dirname, '..') })
  let stdout = ''
  let stderr = ''
  served.stderr.on('data', (chunk) => (stderr += chunk))
  const serving = await new Promise<boolean>((resolve) => {
    served.stdout.on('data', (chunk) => {
      stdout += chunk
      if (stdout.includes('Ctrl-C stops Bruno')) resolve(true)
    })
    served.once('exit', () => resolve(false))
  })
  const exited = new Promise((resolve) => served.once('exit', resolve))
  served.kill('SIGTERM')
  await exited
  t.ok(serving, stderr.slice(-800))
  t.match(stdout, /Starting the devnet as Base \(chain id 8453/)
  t.match(stdout, /chains: base \(chainId 8453\)/)

  // Refused by the serve flags' check, which cli.ts runs before the devnet starts (a refused flag's exit 2
  // and silence: test/config-strict.test.ts, as a process).
  t.throws(() => checkServeFlags({ as: 'bsae' }), new FlagError('--as: no preset is named "bsae"; did you mean "base"?'))
})
