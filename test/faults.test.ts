import t from 'tap'
import { encodeFunctionData, erc20Abi, getAddress } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { devnetConfig, DEVNET_RPC_ENV } from '../config/devnet.ts'
import { startAnvil } from '../core/devnet/anvil.ts'
import { deployDevnet } from '../core/devnet/deploy.ts'
import { mintUsdc } from '../core/devnet/fund.ts'
import { startBruno } from './fixtures/bruno.ts'
import { startFaultProxy, type Fault } from './fixtures/faultProxy.ts'
import { RawMcpClient } from './fixtures/mcpHttp.ts'
import { devnetPricing, ledgerViolations, runnerLedger } from './fixtures/runnerLedger.ts'
import { signTransfer } from './fixtures/signedTransfer.ts'

// A fault-injecting proxy between Bruno and anvil: the node refusing, answering too late,
// truncating, answering garbage, or being another chain. Each answer names the chain, never the
// URL; the runner waits the fault out with backoff and sends nothing it should not.

const anvil = await startAnvil()
const deployment = await deployDevnet(anvil.rpcUrl)
const proxy = await startFaultProxy(anvil.rpcUrl)
t.teardown(async () => {
  await proxy.close()
  await anvil.stop()
})
const env = { ...process.env }
const config = devnetConfig(deployment, env, { port: 0, groups: ['bruno'], pollMs: 100 })
env[DEVNET_RPC_ENV] = proxy.url
const network = config.networks[0]!
const faulty = { ...config, networks: [{ ...network, rpcTimeoutMs: 1_000 }] }
const bruno = await startBruno(t, faulty, env, [proxy.url, anvil.rpcUrl])
const mcp = new RawMcpClient(`${bruno.mcpUrl}/bruno`)
const payee = getAddress(network.payee)
const token = { address: deployment.usdc, name: 'USD Coin', version: '2', chainId: deployment.chainId }
proxy.delayMs = 2_500

const key = generatePrivateKey()
const account = privateKeyToAccount(key).address
await mintUsdc(anvil.rpcUrl, deployment, account, 20_000_000n)
const call = { to: deployment.usdc, data: encodeFunctionData({ abi: erc20Abi, functionName: 'balanceOf', args: [account] }) }

const EXPECTED: Record<Exclude<Fault, 'none'>, RegExp> = {
  refuse: /chain "local" is unavailable: the RPC could not be reached/,
  delay: /chain "local" is unavailable: the RPC request timed out/,
  truncate: /chain "local" is unavailable: the RPC connection broke off mid-answer/,
  garbage: /chain "local" is unavailable: the RPC answered something that is not JSON-RPC/,
  wrongChain: /chain "local" is unavailable: it answered as chain 1, not 31337/,
}

for (const [fault, expected] of Object.entries(EXPECTED) as [Exclude<Fault, 'none'>, RegExp][]) {
  t.test(`${fault}: quote, submit and REST answer a clear error naming the chain, never the URL`, async (t) => {
    await proxy.set('none')
    const quote = await mcp.call('quote', { chain: 'local', call, token: 'USDC', payment: 'authorization' })
    const fee = await signTransfer(key, token, payee, BigInt(quote.amount))
    await proxy.set(fault)
    for (const [tool, args] of [
      ['quote', { chain: 'local', call, token: 'USDC' }],
      ['submit', { chain: 'local', call, payment: { token: deployment.usdc, authorization: fee.message, signature: fee.signature } }],
      ['account', { chain: 'local', address: account }],
    ] as const) {
      const result = await mcp.callTool(tool, args)
      t.equal(result.isError, true, `${tool} is a tool error`)
      t.match(result.content[0].text, expected, `${tool} names the chain and the fault`)
      t.notOk(result.content[0].text.includes(proxy.url.replace(/\/$/, '')), `${tool} does not quote the URL`)
    }
    const rest = await fetch(`${bruno.server.url}/local/v1/quote`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ call, token: 'USDC' }) })
    const answer = await rest.text()
    t.equal(rest.status, 503, 'REST: 503')
    t.match((JSON.parse(answer) as { error: { message: string } }).error.message, expected)
    t.notOk(answer.includes('127.0.0.1'), 'REST does not quote the URL')
    await proxy.set('none')
  })
}

t.test('the runner waits out a refusing node with backoff, then sends once', async (t) => {
  await proxy.set('none')
  const quote = await mcp.call('quote', { chain: 'local', call, token: 'USDC', payment: 'authorization' })
  const fee = await signTransfer(key, token, payee, BigInt(quote.amount))
  const failuresBefore = bruno.logs.filter((line) => line.includes('runner pass failed')).length
  const { id } = await mcp.call('submit', { chain: 'local', call, payment: { token: deployment.usdc, authorization: fee.message, signature: fee.signature } })
  await proxy.set('refuse')
  await new Promise((resolve) => setTimeout(resolve, 2_000))
  const failures = bruno.logs.filter((line) => line.includes('runner pass failed')).slice(failuresBefore).map((line) => JSON.parse(line) as { retryInMs: number })
  t.ok(failures.length >= 2, `the runner retried (${failures.length} failed passes in 2 s)`)
  t.ok(failures.length < 20, 'with backoff: far fewer than one pass per poll (100 ms)')
  t.ok(failures.at(-1)!.retryInMs > failures[0]!.retryInMs, 'the wait grows')
  await proxy.set('none')
  let status = await mcp.call('status', { id })
  for (let i = 0; i < 200 && status.stage !== 'done' && status.stage !== 'failed'; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100))
    status = await mcp.call('status', { id })
  }
  t.equal(status.stage, 'done', status.reason)
  const ledger = await runnerLedger(anvil.rpcUrl, deployment.runner.operator.address, devnetPricing(deployment))
  t.equal(ledger.length, 1, 'sent once')
  t.same(ledgerViolations(ledger), [], 'nothing reverted, nothing spent beyond its payment')
})

t.test('no log line carries the RPC URLs', async (t) => {
  t.ok(bruno.logs.length > 0)
  const urls = [proxy.url.replace(/\/$/, ''), anvil.rpcUrl.replace(/\/$/, '')]
  t.notOk(bruno.logs.some((line) => urls.some((url) => line.includes(url))))
})
