import t from 'tap'
import { encodeFunctionData, erc20Abi, getAddress } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { devnetConfig, DEVNET_RPC_ENV } from '../config/devnet.ts'
import { startAnvil } from '../core/devnet/anvil.ts'
import { deployDevnet } from '../core/devnet/deploy.ts'
import { mintUsdc } from '../core/devnet/fund.ts'
import { startBruno } from './fixtures/bruno.ts'
import { startFaultProxy, type Fault } from './fixtures/faultProxy.ts'
import { postRaw, RawMcpClient } from './fixtures/mcpHttp.ts'
import { devnetPricing, ledgerViolations, runnerLedger } from '../core/testing/runnerLedger.ts'
import { signTransfer } from './fixtures/signedTransfer.ts'
import { waitFor } from './fixtures/waitFor.ts'

// A fault-injecting proxy between Bruno and anvil: the node refusing, answering too late,
// truncating, answering garbage, or being another chain. Each is the chain's fault, not the
// caller's: a JSON-RPC internal error (REST 503) naming the chain, never the URL, with a correlation
// id that its one log line carries; the runner waits the fault out with backoff and sends nothing
// it should not.

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

/**
 * A quote once the node is healthy again. The first call after a fault can still meet it: once in five clean
 * runs, the quote right after the truncate test was answered "the RPC connection broke off mid-answer". Bruno
 * says "try again later" then, so this does, with a deadline. `callTool` throws on a JSON-RPC error and checks
 * a good result against the tool's outputSchema.
 */
async function quoteOnceHealthy() {
  await proxy.set('none')
  const args = { chain: 'local', call, token: 'USDC', payment: 'authorization' }
  const result = await waitFor(
    () => mcp.callTool('quote', args).catch((error: Error) => error.message),
    (result) => typeof result !== 'string' && result.isError !== true,
    'a quote once the node answers again',
    10_000,
  )
  return result.structuredContent
}

/** The one log line of a fault answered with `correlationId`. */
const faultLines = (correlationId: string) => bruno.logs.filter((line) => line.includes(correlationId))

for (const [fault, expected] of Object.entries(EXPECTED) as [Exclude<Fault, 'none'>, RegExp][]) {
  t.test(`${fault}: quote, submit and REST answer an internal error naming the chain, with a correlation id, never the URL`, async (t) => {
    const quote = await quoteOnceHealthy()
    const fee = await signTransfer(key, token, payee, BigInt(quote.amountBaseUnits))
    await proxy.set(fault)
    const urls = [proxy.url.replace(/\/$/, ''), anvil.rpcUrl.replace(/\/$/, '')]
    for (const [tool, args] of [
      ['quote', { chain: 'local', call, token: 'USDC' }],
      ['submit', { chain: 'local', call, payment: { token: deployment.usdc, authorization: fee.message, signature: fee.signature } }],
      ['account', { chain: 'local', address: account }],
    ] as const) {
      // The chain's fault, not the caller's: a JSON-RPC internal error, not an isError result.
      const reply = await mcp.request('tools/call', { name: tool, arguments: args }, tool)
      t.equal(reply.status, 200, `${tool}: HTTP 200 carrying the JSON-RPC error`)
      t.equal(reply.json.result, undefined, `${tool} is not a tool result`)
      t.equal(reply.json.error.code, -32603, `${tool} is a JSON-RPC internal error`)
      t.match(reply.json.error.message, expected, `${tool} names the chain and the fault`)
      t.match(reply.json.error.message, /try again later/)
      const { correlationId } = reply.json.error.data
      t.match(correlationId, /^[0-9a-f]{16}$/, `${tool} carries a correlation id`)
      t.equal(reply.json.error.data.code, 'chain_unavailable')
      t.match(reply.json.error.message, correlationId, 'the message quotes the id')
      const lines = faultLines(correlationId)
      t.equal(lines.length, 1, `${tool}: one log line carries the id`)
      t.match(JSON.parse(lines[0]!), { correlationId, tool, side: 'chain', reason: expected })
      t.notOk(urls.some((url) => reply.text.includes(url) || lines[0]!.includes(url)), `${tool} does not quote the URL`)
    }
    const rest = await fetch(`${bruno.server.url}/local/v1/quote`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ call, token: 'USDC' }) })
    const answer = await rest.text()
    t.equal(rest.status, 503, 'REST: 503')
    const { error } = JSON.parse(answer) as { error: { code: string; message: string; correlationId: string } }
    t.equal(error.code, 'chain_unavailable')
    t.match(error.message, expected)
    t.match(error.correlationId, /^[0-9a-f]{16}$/, 'REST carries a correlation id')
    t.equal(faultLines(error.correlationId).length, 1, 'REST: one log line carries the id')
    t.notOk(answer.includes('127.0.0.1'), 'REST does not quote the URL')
    const rpc = await postRaw(`${bruno.server.url}/rpc`, { jsonrpc: '2.0', id: 1, method: 'bruno_quote', params: { chain: 'local', call, token: 'USDC' } })
    t.equal(rpc.status, 200, 'JSON-RPC: HTTP 200')
    t.equal(rpc.json.error.code, -32603, 'JSON-RPC: internal error')
    t.match(rpc.json.error.message, expected)
    t.equal(rpc.json.error.data.code, 'chain_unavailable')
    t.equal(faultLines(rpc.json.error.data.correlationId).length, 1, 'JSON-RPC: one log line carries the id')
    t.notOk(rpc.text.includes('127.0.0.1'), 'JSON-RPC does not quote the URL')
    await proxy.set('none')
  })
}

t.test('the runner waits out a refusing node with backoff, then sends once', async (t) => {
  const quote = await quoteOnceHealthy()
  const fee = await signTransfer(key, token, payee, BigInt(quote.amountBaseUnits))
  const failuresBefore = bruno.logs.filter((line) => line.includes('runner pass failed')).length
  const { id } = await mcp.call('submit', { chain: 'local', call, payment: { token: deployment.usdc, authorization: fee.message, signature: fee.signature } })
  await proxy.set('refuse')
  // Three failed passes, however long a loaded machine takes to reach them; then the backoff is
  // read off the log: each wait announced, and kept, before the next pass.
  const failedPasses = async () => bruno.logs.filter((line) => line.includes('runner pass failed')).slice(failuresBefore).map((line) => JSON.parse(line) as { time: number; retryInMs: number })
  const failures = await waitFor(failedPasses, (lines) => lines.length >= 3, 'three failed runner passes', 30_000)
  t.ok(failures.length >= 3, `the runner retried (${failures.length} failed passes)`)
  for (let i = 1; i < failures.length; i++) {
    t.ok(failures[i]!.retryInMs > failures[i - 1]!.retryInMs, `the wait grows: ${failures[i - 1]!.retryInMs} ms, then ${failures[i]!.retryInMs} ms`)
    // The line is written a moment after its retry time is set: a few ms of slack.
    const gap = failures[i]!.time - failures[i - 1]!.time
    t.ok(gap >= failures[i - 1]!.retryInMs - 5, `the next pass waited it out (${gap} ms after a ${failures[i - 1]!.retryInMs} ms backoff; the poll is 100 ms)`)
  }
  t.ok(failures[0]!.retryInMs > 100, 'the first wait already exceeds the poll')
  await proxy.set('none')
  const status = await waitFor(() => mcp.call('status', { id }), (status) => status.stage === 'done' || status.stage === 'failed', `submission ${id} settled`, 30_000)
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
