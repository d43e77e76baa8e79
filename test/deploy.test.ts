import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { createPublicClient, createTestClient, formatEther, getAddress, http, keccak256, parseEther, parseGwei, type Address, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { payeeVaultArtifact, paymentFirstEnforcerArtifact, runnerArtifact } from '../contracts/artifacts.ts'
import {
  deployCommand,
  deploymentGasLimit,
  PAYEE_VAULT_DEPLOYMENT_GAS,
  PAYMENT_FIRST_ENFORCER_DEPLOYMENT_GAS,
  payeeVaultDeploymentAddress,
  RUNNER_DEPLOYMENT_GAS,
  runnerDeploymentAddress,
} from '../core/commands/deploy.ts'
import { paymentFirstEnforcer } from '../plugins/metamask/contracts.ts'
import { preflightCommand } from '../core/commands/preflight.ts'
import { startAnvil } from '../core/devnet/anvil.ts'
import { DEPLOYMENT_PROXY } from '../core/chain/deterministicDeployment.ts'
import { deployDevnet } from '../core/devnet/deploy.ts'
import { creationRuntime } from '../core/preflight/creationRuntime.ts'
import { listenOnLoopback } from './fixtures/loopbackServer.ts'

// `bruno deploy` on fresh anvils: the Runner lands at one CREATE2 address whatever the chain (two
// anvils, two chain ids), the code there is the Runner artifact's for the runner key's address, its
// gas is what --help and DEPLOYMENT.md say, a second run finds it and exits 0, other code there or a
// chain without the deployment proxy refuses, a deployer that cannot pay is told what it needs, and
// the printed entry, pasted into a config, makes `bruno preflight` pass once the runner is funded.

// anvil's account #0 pays; the runner (the Runner's operator) is a fresh key with no ETH at all.
const deployerKey = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80'
const runnerKey = generatePrivateKey()
const operator = privateKeyToAccount(runnerKey).address

interface Run {
  code: number
  stdout: string
  stderr: string
}

async function deploy(rpcUrl: string, ...extra: string[]): Promise<Run> {
  return deployWith({ runner: runnerKey, deployer: deployerKey }, rpcUrl, ...extra)
}

async function deployWith(keys: { runner: Hex; deployer: Hex }, rpcUrl: string, ...extra: string[]): Promise<Run> {
  let stdout = ''
  let stderr = ''
  const env = { TEST_RPC_URL: rpcUrl, TEST_RUNNER_KEY: keys.runner, TEST_DEPLOYER_KEY: keys.deployer }
  const code = await deployCommand.run(
    ['--rpc-url-env', 'TEST_RPC_URL', '--runner-key-env', 'TEST_RUNNER_KEY', '--deployer-key-env', 'TEST_DEPLOYER_KEY', ...extra],
    { env, stdout: { write: (text: string) => (stdout += text) }, stderr: { write: (text: string) => (stderr += text) } },
  )
  for (const secret of [rpcUrl, keys.runner.slice(2), keys.deployer.slice(2)]) {
    if (stdout.includes(secret) || stderr.includes(secret)) throw new Error('bruno deploy printed the RPC URL or a key')
  }
  return { code, stdout, stderr }
}

/** The JSON entry `bruno deploy` prints after "Network entry for the config's "networks"…:". */
function printedEntry(stdout: string): Record<string, any> {
  const start = stdout.indexOf('\n{', stdout.indexOf('Network entry'))
  return JSON.parse(stdout.slice(start, stdout.lastIndexOf('}') + 1))
}

const first = await startAnvil()
const second = await startAnvil({ chainId: 4242 })
t.teardown(async () => {
  await first.stop()
  await second.stop()
})
const owner = privateKeyToAccount(deployerKey).address
const expected = runnerDeploymentAddress(operator, owner)

t.test('the same address on two chains, and the Runner artifact\'s code for the runner key there', async (t) => {
  const deployed: Address[] = []
  const hashes: Hex[] = []
  for (const anvil of [first, second]) {
    const client = createPublicClient({ transport: http(anvil.rpcUrl) })
    t.equal(await client.getCode({ address: expected }), undefined, 'nothing there before')
    const run = await deploy(anvil.rpcUrl)
    t.equal(run.code, 0, run.stderr)
    const address = getAddress(/Deployed the Runner for operator 0x[0-9a-fA-F]{40}, owner 0x[0-9a-fA-F]{40} at (0x[0-9a-fA-F]{40})/.exec(run.stdout)![1]!)
    deployed.push(address)
    hashes.push(/\(transaction (0x[0-9a-f]{64})\)/.exec(run.stdout)![1]! as Hex)
    t.equal(await client.getCode({ address }), await creationRuntime(client, runnerArtifact, [operator, owner]), 'the code is the artifact\'s, operator and owner filled in')
    t.equal(await client.readContract({ address, abi: runnerArtifact.abi, functionName: 'operator' }), operator)
    t.equal(await client.readContract({ address, abi: runnerArtifact.abi, functionName: 'owner' }), owner, 'the deployer owns it')
    t.equal(await client.getBalance({ address: operator }), 0n, 'the deployer paid, not the runner')
    t.match(printedEntry(run.stdout), { name: `chain-${await client.getChainId()}`, chainId: await client.getChainId(), runner: { contract: address, key: { env: 'TEST_RUNNER_KEY' } } })
  }
  t.equal(deployed[0], deployed[1], 'one address on both chains (chain ids 31337 and 4242)')
  t.equal(deployed[0], expected)
  t.not(runnerDeploymentAddress(owner, owner), expected, 'another operator, another address')
  t.not(runnerDeploymentAddress(operator, operator), expected, 'another owner, another address')

  // The gas --help and DEPLOYMENT.md state is the deployment's, measured.
  const client = createPublicClient({ transport: http(first.rpcUrl) })
  const used = (await client.getTransactionReceipt({ hash: hashes[0]! })).gasUsed
  const limit = (await client.getTransaction({ hash: hashes[0]! })).gas
  t.ok(used * 100n >= RUNNER_DEPLOYMENT_GAS * 95n && used * 100n <= RUNNER_DEPLOYMENT_GAS * 105n, `RUNNER_DEPLOYMENT_GAS ${RUNNER_DEPLOYMENT_GAS} is within 5% of the ${used} gas measured`)
  const stated = /it needs ETH for ~(\d+\.\d)M gas/.exec(deployCommand.usage.replace(/\s+/g, ' '))
  t.ok(stated, '--help states the gas')
  // Rounded to 0.1M: half a step, and a little for estimates that vary.
  t.ok(Math.abs(Number(stated![1]) * 1e6 - Number(limit)) <= 60_000, `--help's ~${stated![1]}M gas is the gas limit sent (${limit})`)
  t.match((await readFile(new URL('../DEPLOYMENT.md', import.meta.url), 'utf8')).replace(/\s+/g, ' '), `ETH for ~${stated![1]}M gas`, 'DEPLOYMENT.md states the same')
})

t.test('a second run finds the Runner deployed: nothing sent, its entry again, exit 0; other code there is refused', async (t) => {
  const client = createPublicClient({ transport: http(first.rpcUrl) })
  const nonce = await client.getTransactionCount({ address: privateKeyToAccount(deployerKey).address })
  const again = await deploy(first.rpcUrl)
  t.equal(again.code, 0, again.stderr)
  t.equal(again.stderr, '')
  t.match(again.stdout, `The Runner for operator ${operator}, owner ${owner} is already deployed at ${expected} on chain 31337`)
  t.match(again.stdout, /nothing was sent/)
  t.equal(await client.getTransactionCount({ address: privateKeyToAccount(deployerKey).address }), nonce, 'nothing was sent')
  t.match(printedEntry(again.stdout), { runner: { contract: expected } }, 'the entry is printed again')

  // Other code at the address is not taken for the Runner.
  const test = createTestClient({ mode: 'anvil', transport: http(second.rpcUrl) })
  await test.setCode({ address: expected, bytecode: '0x6000' })
  const other = await deploy(second.rpcUrl)
  t.equal(other.code, 1)
  t.match(other.stderr, `${expected} on chain 4242 already holds code, and it is not the Runner for operator ${operator}, owner ${owner}`)
})

t.test('--lane: the deployer, the Runner\'s owner, allows each lane as an operator; a second run sends nothing for it', async (t) => {
  const client = createPublicClient({ transport: http(first.rpcUrl) })
  const lanes = [privateKeyToAccount(generatePrivateKey()).address, privateKeyToAccount(generatePrivateKey()).address]
  const isOperator = (lane: Address) => client.readContract({ address: expected, abi: runnerArtifact.abi, functionName: 'isOperator', args: [lane] })
  t.same(await Promise.all(lanes.map(isOperator)), [false, false])
  const run = await deploy(first.rpcUrl, '--lane', lanes[0]!, '--lane', lanes[1]!)
  t.equal(run.code, 0, run.stderr)
  for (const lane of lanes) t.match(run.stdout, new RegExp(`Allowed lane ${lane} as an operator of ${expected} on chain 31337 \\(transaction 0x[0-9a-f]{64}\\)`))
  t.match(run.stdout, `Name each lane's key in the entry's runner.lanes, and fund every lane: ${lanes.join(', ')}.`)
  t.same(await Promise.all(lanes.map(isOperator)), [true, true], 'both are operators now')
  const nonce = await client.getTransactionCount({ address: owner })
  const again = await deploy(first.rpcUrl, '--lane', lanes[0]!)
  t.equal(again.code, 0, again.stderr)
  t.match(again.stdout, `Lane ${lanes[0]} is already an operator of ${expected} on chain 31337: nothing was sent.`)
  t.equal(await client.getTransactionCount({ address: owner }), nonce, 'nothing was sent')
  const malformed = await deploy(first.rpcUrl, '--lane', 'not-an-address')
  t.match(malformed, { code: 2, stderr: /--lane: not-an-address is not an address with a valid EIP-55 checksum/ })
})

t.test('--wallet-delegate: the owner lists accounts delegated to it as wallets that pay by signed transfer; a second run sends nothing for it (issue 46)', async (t) => {
  const client = createPublicClient({ transport: http(first.rpcUrl) })
  const delegate = privateKeyToAccount(generatePrivateKey()).address
  const codehash = keccak256(`0xef0100${delegate.slice(2).toLowerCase()}`)
  const listed = () => client.readContract({ address: expected, abi: runnerArtifact.abi, functionName: 'payerCodeAllowed', args: [codehash] })
  t.equal(await listed(), false)
  const run = await deploy(first.rpcUrl, '--wallet-delegate', delegate)
  t.equal(run.code, 0, run.stderr)
  t.match(run.stdout, new RegExp(`Listed accounts delegated to ${delegate} \\(code hash ${codehash}\\) as wallets that pay ${expected} by signed transfer on chain 31337 \\(transaction 0x[0-9a-f]{64}\\)`))
  t.equal(await listed(), true, 'their code is on the Runner\'s list')
  const nonce = await client.getTransactionCount({ address: owner })
  const again = await deploy(first.rpcUrl, '--wallet-delegate', delegate)
  t.equal(again.code, 0, again.stderr)
  t.match(again.stdout, `Accounts delegated to ${delegate} already pay ${expected} by signed transfer on chain 31337: nothing was sent.`)
  t.equal(await client.getTransactionCount({ address: owner }), nonce, 'nothing was sent')
  t.match(await deploy(first.rpcUrl, '--wallet-delegate', '0x12'), { code: 2, stderr: /--wallet-delegate: 0x12 is not an address with a valid EIP-55 checksum/ })
})

t.test('--wallet-factory: the owner lists a factory whose ERC-6492 signatures the Runner deploys; a second run sends nothing for it (issue 46)', async (t) => {
  const client = createPublicClient({ transport: http(first.rpcUrl) })
  const factory = privateKeyToAccount(generatePrivateKey()).address
  const listed = () => client.readContract({ address: expected, abi: runnerArtifact.abi, functionName: 'walletFactoryAllowed', args: [factory] })
  t.equal(await listed(), false)
  const run = await deploy(first.rpcUrl, '--wallet-factory', factory)
  t.equal(run.code, 0, run.stderr)
  t.match(run.stdout, new RegExp(`Listed wallet factory ${factory}: ${expected} deploys the wallets its ERC-6492 signatures name, then takes their payment, on chain 31337 \\(transaction 0x[0-9a-f]{64}\\)`))
  t.equal(await listed(), true, 'on the Runner\'s list')
  const nonce = await client.getTransactionCount({ address: owner })
  const again = await deploy(first.rpcUrl, '--wallet-factory', factory)
  t.equal(again.code, 0, again.stderr)
  t.match(again.stdout, `Wallet factory ${factory} is already on ${expected}'s list on chain 31337: nothing was sent.`)
  t.equal(await client.getTransactionCount({ address: owner }), nonce, 'nothing was sent')
  t.match(await deploy(first.rpcUrl, '--wallet-factory', '0x12'), { code: 2, stderr: /--wallet-factory: 0x12 is not an address with a valid EIP-55 checksum/ })
})

t.test('--metamask: Bruno\'s PaymentFirstEnforcer at the one address the metamask group names; a second run sends nothing for it', async (t) => {
  const client = createPublicClient({ transport: http(first.rpcUrl) })
  t.equal(await client.getCode({ address: paymentFirstEnforcer }), undefined, 'not there before')
  const run = await deploy(first.rpcUrl, '--metamask')
  t.equal(run.code, 0, run.stderr)
  t.match(run.stdout, `Deployed Bruno's PaymentFirstEnforcer (the metamask group's caveat) at ${paymentFirstEnforcer} on chain 31337`)
  t.equal(await client.getCode({ address: paymentFirstEnforcer }), paymentFirstEnforcerArtifact.deployedBytecode, "the code is the artifact's")
  const hash = /PaymentFirstEnforcer[^\n]*\(transaction (0x[0-9a-f]{64})\)/.exec(run.stdout)![1]! as Hex
  const used = (await client.getTransactionReceipt({ hash })).gasUsed
  t.ok(
    used * 100n >= PAYMENT_FIRST_ENFORCER_DEPLOYMENT_GAS * 95n && used * 100n <= PAYMENT_FIRST_ENFORCER_DEPLOYMENT_GAS * 105n,
    `PAYMENT_FIRST_ENFORCER_DEPLOYMENT_GAS ${PAYMENT_FIRST_ENFORCER_DEPLOYMENT_GAS} is within 5% of the ${used} gas measured`,
  )
  const nonce = await client.getTransactionCount({ address: owner })
  const again = await deploy(first.rpcUrl, '--metamask')
  t.equal(again.code, 0, again.stderr)
  t.match(again.stdout, `Bruno's PaymentFirstEnforcer (the metamask group's caveat) is already deployed at ${paymentFirstEnforcer} on chain 31337`)
  t.equal(await client.getTransactionCount({ address: owner }), nonce, 'nothing was sent')
})

t.test('a chain without the deployment proxy is refused, naming the proxy', async (t) => {
  const anvil = await startAnvil({ chainId: 5151 })
  t.teardown(() => anvil.stop())
  await createTestClient({ mode: 'anvil', transport: http(anvil.rpcUrl) }).setCode({ address: DEPLOYMENT_PROXY, bytecode: '0x' })
  const run = await deploy(anvil.rpcUrl)
  t.equal(run.code, 1)
  t.match(run.stderr, `chain 5151 has no deterministic deployment proxy at ${DEPLOYMENT_PROXY}`)
})

t.test('a deployer that cannot pay is told its address, what the deployment needs and what it holds', async (t) => {
  const client = createPublicClient({ transport: http(first.rpcUrl) })
  const keys = { runner: generatePrivateKey(), deployer: generatePrivateKey() }
  const poor = privateKeyToAccount(keys.deployer).address
  await createTestClient({ mode: 'anvil', transport: http(first.rpcUrl) }).setBalance({ address: poor, value: parseEther('0.001') })
  const run = await deployWith(keys, first.rpcUrl)
  t.equal(run.code, 1)
  t.match(run.stderr, `the deployer ${poor} cannot pay for the deployment on chain 31337: it holds 0.001 ETH and needs `)
  t.match(run.stderr, `Send ${poor} ETH, or name a funded key with --deployer-key-env, then run bruno deploy again; nothing was sent`)
  t.notMatch(run.stderr, /total cost|insufficient funds/i, 'not viem\'s words')
  const [, needed, gas, gwei] = /needs ([\d.]+) ETH \((\d+) gas at ([\d.]+) gwei\)/.exec(run.stderr)!
  t.equal(needed, formatEther(BigInt(gas!) * parseGwei(gwei!)), 'the ETH needed is the gas limit × the max fee per gas')
  t.ok(parseEther(needed!) > parseEther('0.001'), 'more than it holds')
  t.equal(await client.getTransactionCount({ address: poor }), 0, 'nothing was sent')
  t.equal(await client.getCode({ address: runnerDeploymentAddress(privateKeyToAccount(keys.runner).address, poor) }), undefined)

  // What a node refuses for lack of funds is told the same way: an estimate it will not make (the
  // known gas stands in), and a send it refuses though gas × fee is covered (an L1 data fee, say).
  const refusing = (method: string) =>
    listenOnLoopback(async (req, res) => {
      let body = ''
      for await (const chunk of req) body += chunk
      const call = JSON.parse(body) as { id: number; method: string }
      const answer =
        call.method === method
          ? JSON.stringify({ jsonrpc: '2.0', id: call.id, error: { code: -32000, message: 'insufficient funds for gas * price + value: have 1 want 2' } })
          : await (await fetch(first.rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body })).text()
      res.writeHead(200, { 'content-type': 'application/json' }).end(answer)
    })
  const noEstimate = await refusing('eth_estimateGas')
  t.teardown(() => noEstimate.close())
  const unestimated = await deployWith(keys, noEstimate.url)
  t.equal(unestimated.code, 1)
  t.match(unestimated.stderr, `the deployer ${poor} cannot pay for the deployment on chain 31337: it holds 0.001 ETH and needs `)
  t.match(unestimated.stderr, `(${deploymentGasLimit(RUNNER_DEPLOYMENT_GAS)} gas at `)

  const noSend = await refusing('eth_sendRawTransaction')
  t.teardown(() => noSend.close())
  const rich = privateKeyToAccount(deployerKey).address
  const unsent = await deployWith({ runner: keys.runner, deployer: deployerKey }, noSend.url)
  t.equal(unsent.code, 1)
  t.match(unsent.stderr, new RegExp(`the deployer ${rich} cannot pay for the deployment on chain 31337: it holds [\\d.]+ ETH and needs more than [\\d.]+ ETH \\(\\d+ gas at [\\d.]+ gwei\\): the chain charges beyond the gas`))
  t.notMatch(unsent.stderr, /total cost|insufficient funds/i)
})

t.test('with --treasury, a deployer that can pay for the Runner but not the PayeeVault too is refused before either is sent, naming both (issue 49, point 7)', async (t) => {
  const client = createPublicClient({ transport: http(first.rpcUrl) })
  const anvil = createTestClient({ mode: 'anvil', transport: http(first.rpcUrl) })
  const keys = { runner: generatePrivateKey(), deployer: generatePrivateKey() }
  const deployer = privateKeyToAccount(keys.deployer).address
  const treasury = privateKeyToAccount(generatePrivateKey()).address
  await anvil.setBalance({ address: deployer, value: parseEther('0.001') })
  const poor = await deployWith(keys, first.rpcUrl, '--treasury', treasury)
  t.equal(poor.code, 1)
  const [, gas, runnerGas, vaultGas, gwei] = /needs [\d.]+ ETH \((\d+) gas: (\d+) for the Runner for operator 0x[0-9a-fA-F]{40}, owner 0x[0-9a-fA-F]{40}, (\d+) for the PayeeVault at ([\d.]+) gwei\)/.exec(poor.stderr) ?? []
  t.ok(gas, `the refusal names both deployments: ${poor.stderr}`)
  t.equal(BigInt(gas!), BigInt(runnerGas!) + BigInt(vaultGas!))
  t.equal(BigInt(vaultGas!), deploymentGasLimit(PAYEE_VAULT_DEPLOYMENT_GAS))
  // ETH for the Runner alone: still refused, nothing sent (before, the Runner was deployed and the vault then refused).
  await anvil.setBalance({ address: deployer, value: BigInt(runnerGas!) * parseGwei(gwei!) * 11n / 10n })
  const half = await deployWith(keys, first.rpcUrl, '--treasury', treasury)
  t.equal(half.code, 1, 'refused')
  t.match(half.stderr, 'for the PayeeVault at ')
  t.equal(await client.getTransactionCount({ address: deployer }), 0, 'nothing was sent')
  t.equal(await client.getCode({ address: runnerDeploymentAddress(privateKeyToAccount(keys.runner).address, deployer) }), undefined, 'no Runner')
})

t.test('flags and variables are checked before anything is sent', async (t) => {
  const flagged = async (argv: string[], env: NodeJS.ProcessEnv) => {
    let stderr = ''
    const code = await deployCommand.run(argv, { env, stdout: { write: () => true }, stderr: { write: (text: string) => (stderr += text) } })
    return { code, stderr }
  }
  t.match(await flagged(['--runner-key-env', 'K'], {}), { code: 2, stderr: /--rpc-url-env <NAME> is required/ })
  t.match(await flagged(['--rpc-url-env', 'U', '--runner-key-env', 'K'], { U: first.rpcUrl, K: '0x1234' }), { code: 2, stderr: /K \(--runner-key-env\) must hold a 32-byte hex private key/ })
  t.match(await flagged(['--rpc-url-env', 'U', '--runner-key-env', 'K'], { U: first.rpcUrl }), { code: 2, stderr: /environment variable K \(--runner-key-env\) is not set/ })
  t.match(await flagged(['--rpc-url-env', 'U', '--runner-key-env', 'K', '--deployer-key-env', 'D'], { U: first.rpcUrl, K: runnerKey }), { code: 2, stderr: /environment variable D \(--deployer-key-env\) is not set/ })
  t.match(await flagged(['--rpc-url-env', first.rpcUrl, '--runner-key-env', 'K'], {}), { code: 2, stderr: /is not an environment variable name: the flags take the variable's name, not its value/ })
  t.match(
    await flagged(['--rpc-url-env', 'U', '--runner-key-env', 'K', '--payee', '0xa0ee7A142d267C1f36714E4a8F75612F20a79720'], { U: first.rpcUrl, K: runnerKey }),
    { code: 2, stderr: /--payee: .* is not an address with a valid EIP-55 checksum/ },
  )
})

t.test('deploy, fund, preflight: the printed entry is a network preflight passes', async (t) => {
  // A chain where everything but the Runner is in place: the devnet as Base, at Base's addresses.
  const anvil = await startAnvil({ chainId: 8453 })
  t.teardown(() => anvil.stop())
  await deployDevnet(anvil.rpcUrl, { as: 'base' })
  const payee = '0x90F79bf6EB2c4f870365E785982E1f101E93b906'
  const run = await deploy(anvil.rpcUrl, '--payee', payee)
  t.equal(run.code, 0, run.stderr)
  const entry = printedEntry(run.stdout)
  t.same(entry, { preset: 'base', rpcUrl: { env: 'TEST_RPC_URL' }, payee, runner: { contract: expected, key: { env: 'TEST_RUNNER_KEY' } } }, 'on a preset\'s chain, the preset and what it leaves to the operator')

  const dir = await mkdtemp(join(tmpdir(), 'bruno-deploy-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'bruno.json')
  await writeFile(file, JSON.stringify({ store: { path: ':memory:' }, networks: [entry] }, null, 2))
  const env = { TEST_RPC_URL: anvil.rpcUrl, TEST_RUNNER_KEY: runnerKey }
  const preflight = async () => {
    let stdout = ''
    let stderr = ''
    const code = await preflightCommand.run(['--config', file], { env, stdout: { write: (text: string) => (stdout += text) }, stderr: { write: (text: string) => (stderr += text) } })
    return { code, stdout, stderr }
  }
  const unfunded = await preflight()
  t.equal(unfunded.code, 1, 'the runner has no ETH yet')
  t.match(unfunded.stdout, /\[FAIL\] runner balance: 0 ETH/)
  t.match(unfunded.stdout, `[pass] runner contract: the Runner artifact's code at ${expected}, operator ${operator}`)

  await createTestClient({ mode: 'anvil', transport: http(anvil.rpcUrl) }).setBalance({ address: operator, value: parseEther('1') })
  const funded = await preflight()
  t.equal(funded.code, 0, funded.stdout + funded.stderr)
  t.match(funded.stdout, /^base \(chainId 8453\): ok$/m)
  t.notMatch(funded.stdout, /\[FAIL\]/)
})

t.test('--treasury: the Runner\'s PayeeVault at its CREATE2 address, owned by the treasury, is the printed payee; a second run sends nothing', async (t) => {
  const anvil = await startAnvil({ chainId: 8453 })
  t.teardown(() => anvil.stop())
  await deployDevnet(anvil.rpcUrl, { as: 'base' })
  const client = createPublicClient({ transport: http(anvil.rpcUrl) })
  const treasury = '0x90F79bf6EB2c4f870365E785982E1f101E93b906'
  const vault = payeeVaultDeploymentAddress(expected, treasury)
  const run = await deploy(anvil.rpcUrl, '--treasury', treasury)
  t.equal(run.code, 0, run.stderr)
  t.match(run.stdout, `Deployed the PayeeVault of Runner ${expected} for treasury ${treasury} at ${vault}`)
  t.equal(await client.getCode({ address: vault }), await creationRuntime(client, payeeVaultArtifact, [expected, treasury]), "the code is the vault artifact's, its Runner and owner filled in")
  t.equal(await client.readContract({ address: vault, abi: payeeVaultArtifact.abi, functionName: 'owner' }), treasury)
  t.equal(await client.readContract({ address: vault, abi: payeeVaultArtifact.abi, functionName: 'runner' }), expected)
  t.same(printedEntry(run.stdout), { preset: 'base', rpcUrl: { env: 'TEST_RPC_URL' }, payee: vault, runner: { contract: expected, key: { env: 'TEST_RUNNER_KEY' } } }, 'the vault is the payee')
  const hash = /PayeeVault[^\n]*\(transaction (0x[0-9a-f]{64})\)/.exec(run.stdout)![1]! as Hex
  const used = (await client.getTransactionReceipt({ hash })).gasUsed
  t.ok(used * 100n >= PAYEE_VAULT_DEPLOYMENT_GAS * 95n && used * 100n <= PAYEE_VAULT_DEPLOYMENT_GAS * 105n, `PAYEE_VAULT_DEPLOYMENT_GAS ${PAYEE_VAULT_DEPLOYMENT_GAS} is within 5% of the ${used} gas measured`)

  const nonce = await client.getTransactionCount({ address: privateKeyToAccount(deployerKey).address })
  const again = await deploy(anvil.rpcUrl, '--treasury', treasury)
  t.equal(again.code, 0, again.stderr)
  t.match(again.stdout, `The PayeeVault of Runner ${expected} for treasury ${treasury} is already deployed at ${vault}`)
  t.equal(await client.getTransactionCount({ address: privateKeyToAccount(deployerKey).address }), nonce, 'nothing was sent')
  t.equal(printedEntry(again.stdout).payee, vault)

  const both = await deploy(anvil.rpcUrl, '--treasury', treasury, '--payee', treasury)
  t.equal(both.code, 2)
  t.match(both.stderr, '--payee and --treasury both name the payee')
  const bad = await deploy(anvil.rpcUrl, '--treasury', '0x90f79bf6eb2c4f870365e785982e1f101e93B906')
  t.equal(bad.code, 2)
  t.match(bad.stderr, '--treasury: 0x90f79bf6eb2c4f870365e785982e1f101e93B906 is not an address with a valid EIP-55 checksum')
})
