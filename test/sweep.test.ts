import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { createPublicClient, createWalletClient, erc20Abi, http, parseUnits, type Address } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { devnetChain } from '../core/devnet/chain.ts'
import { devnetConfig, DEVNET_RUNNER_KEY_ENV } from '../config/devnet.ts'
import { sweepCommand } from '../core/commands/sweep.ts'
import { lockSqliteStore } from '../core/store/sqliteLock.ts'
import { startAnvil } from '../core/devnet/anvil.ts'
import { deployDevnet } from '../core/devnet/deploy.ts'
import { devnetPricing, ledgerViolations, runnerLedger } from '../core/testing/runnerLedger.ts'

// `bruno sweep` (core/commands/sweep.ts) as an operator runs it, on a devnet whose Runner was sent USDC by
// mistake: it sends the Runner's whole balance to the payee (or --to), signed by the runner key; nothing held,
// it sends nothing; a key that is not the Runner's operator sends nothing either. Issue 27, point 9.

const anvil = await startAnvil()
const deployment = await deployDevnet(anvil.rpcUrl)
t.teardown(async () => {
  const entries = await runnerLedger(anvil.rpcUrl, deployment.runner.operator.address, devnetPricing(deployment))
  await anvil.stop()
  const violations = ledgerViolations(entries)
  if (violations.length > 0) throw new Error(`runner ledger: ${violations.join('; ')}`)
})
const env: NodeJS.ProcessEnv = {}
const config = devnetConfig(deployment, env, { port: 0 })
const dir = t.testdir({})
const configFile = join(dir, 'bruno.json')
await writeFile(configFile, JSON.stringify(config))
const chain = devnetChain(deployment.chainId)
const funder = createWalletClient({ account: privateKeyToAccount(deployment.demoAccounts[2]!.privateKey), chain, transport: http(anvil.rpcUrl) })
const reader = createPublicClient({ chain, transport: http(anvil.rpcUrl), pollingInterval: 50 })
const runner = deployment.runner.contract
const payee = config.networks[0]!.payee
const balanceOf = (address: Address) => reader.readContract({ address: deployment.usdc, abi: erc20Abi, functionName: 'balanceOf', args: [address] })

async function sweep(argv: string[], withEnv: NodeJS.ProcessEnv = env) {
  let stdout = ''
  let stderr = ''
  const code = await sweepCommand.run(argv, { env: withEnv, stdout: { write: (text: string) => (stdout += text) }, stderr: { write: (text: string) => (stderr += text) } })
  return { code, stdout, stderr }
}

t.test('nothing held: says so, sends nothing', async (t) => {
  const { code, stdout } = await sweep(['--config', configFile, '--token', 'USDC'])
  t.equal(code, 0)
  t.equal(stdout, `The Runner ${runner} on local holds no USDC: nothing to sweep.\n`)
})

t.test('7 USDC sent to the Runner: swept to the payee; a key that is not the operator sends nothing', async (t) => {
  const held = parseUnits('7', 6)
  await reader.waitForTransactionReceipt({ hash: await funder.writeContract({ address: deployment.usdc, abi: erc20Abi, functionName: 'transfer', args: [runner, held] }) })
  const stranger = '0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba'
  const refused = await sweep(['--config', configFile, '--token', 'USDC'], { ...env, [DEVNET_RUNNER_KEY_ENV]: stranger })
  t.equal(refused.code, 1)
  t.match(refused.stderr, /^bruno sweep: the sweep failed: .*NotOperator/)
  t.equal(await balanceOf(runner), held, 'still held')
  t.notMatch(refused.stderr + refused.stdout, anvil.rpcUrl, 'no RPC URL in what it prints')

  const payeeBefore = await balanceOf(payee as Address)
  const { code, stdout, stderr } = await sweep(['--config', configFile, '--token', 'USDC'])
  t.equal(code, 0, stderr)
  t.match(stdout, new RegExp(`^Swept 7 USDC from the Runner ${runner} on local to ${payee} \\(transaction 0x[0-9a-f]{64}\\)\\.\\n$`))
  t.equal(await balanceOf(runner), 0n)
  t.equal(await balanceOf(payee as Address), payeeBefore + held)
})

t.test('--to and a token by address', async (t) => {
  const held = parseUnits('2', 6)
  await reader.waitForTransactionReceipt({ hash: await funder.writeContract({ address: deployment.usdc, abi: erc20Abi, functionName: 'transfer', args: [runner, held] }) })
  const to = '0x5151515151515151515151515151515151515151'
  const { code, stdout } = await sweep(['--config', configFile, '--chain', 'local', '--token', deployment.usdc, '--to', to])
  t.equal(code, 0)
  t.match(stdout, /^Swept 2 USDC /)
  t.equal(await balanceOf(to), held)
})

t.test('while a Bruno serves from the same store (and so sends with the runner key), sweep refuses and sends nothing (issue 49, point 8)', async (t) => {
  const storePath = join(dir, 'held.sqlite')
  const heldConfig = join(dir, 'held.json')
  await writeFile(heldConfig, JSON.stringify({ ...config, store: { path: storePath } }))
  await funder.writeContract({ address: deployment.usdc, abi: erc20Abi, functionName: 'transfer', args: [runner, parseUnits('1', 6)], chain })
  const held = lockSqliteStore(storePath)
  const nonce = await reader.getTransactionCount({ address: deployment.runner.operator.address })
  const refused = await sweep(['--config', heldConfig, '--token', 'USDC'])
  t.equal(refused.code, 1)
  t.match(refused.stderr, /^bruno sweep: store\.path \S+held\.sqlite is in use by another Bruno \(PID \d+/)
  t.match(refused.stderr, 'A running Bruno sends with the runner key; stop it, then sweep (nothing was sent)')
  t.equal(await reader.getTransactionCount({ address: deployment.runner.operator.address }), nonce, 'nothing was sent')
  held.release()
  const swept = await sweep(['--config', heldConfig, '--token', 'USDC'])
  t.equal(swept.code, 0, swept.stderr)
  t.equal(await balanceOf(runner), 0n, 'once it stopped, swept')
})

t.test('flags: each wrong one named, exit 2, nothing sent', async (t) => {
  for (const [argv, message] of [
    [['--token', 'USDC'], '--config <file> is required'],
    [['--config', configFile], '--token <symbol|address> is required'],
    [['--config', configFile, '--token', 'USDC', '--chain', 'base'], '--chain: name one of the configured chains (local)'],
    [['--config', configFile, '--token', 'DOGE'], '--token: "DOGE" is neither a token configured on local nor an address'],
    [['--config', configFile, '--token', 'USDC', '--to', '0x51515151515151515151515151515151515151AA'], '--to: 0x51515151515151515151515151515151515151AA is not an address with a valid EIP-55 checksum'],
  ] as const) {
    const { code, stderr } = await sweep([...argv])
    t.equal(code, 2, argv.join(' '))
    t.match(stderr, `bruno sweep: ${message}`)
  }
})
