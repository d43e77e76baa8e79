import t from 'tap'
import { Writable } from 'node:stream'
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client'
import { createPublicClient, custom, encodeErrorResult, encodeFunctionData, erc20Abi, getAddress, http, parseAbi, type PublicClient } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { devnetChain } from '../core/devnet/chain.ts'
import { guardedTransport } from '../core/chain/guardedTransport.ts'
import { mintUsdc } from '../core/devnet/fund.ts'
import { blameOf, BrunoFault, reportFault } from '../core/chain/faults.ts'
import { createLogger } from '../core/logger.ts'
import { ToolError } from '../core/tool/tool.ts'
import { startDevnetBruno } from './fixtures/devnetBruno.ts'
import { postRaw, RawMcpClient } from './fixtures/mcpHttp.ts'
import { signTransfer } from './fixtures/signedTransfer.ts'

// Issue 16, point 4: a refusal caused by the caller is a tool result with isError (REST 4xx, JSON-RPC
// an application code); a fault of Bruno or its chain is a JSON-RPC internal error (REST 5xx) with a
// correlation id that its one log line carries, never blamed on the caller, never quoting the RPC URL.

const CLOSED = 'http://127.0.0.1:9/rpc-secret-key'
const token = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913'

/** A client whose node answers every request with `answer` (a JSON-RPC error to throw, or a result). */
function nodeAnswering(answer: { error: { code: number; message: string; data?: unknown } } | { result: unknown }): PublicClient {
  const provider = {
    async request() {
      if ('error' in answer) throw answer.error
      return answer.result
    },
  }
  return createPublicClient({ chain: devnetChain(), transport: custom(provider, { retryCount: 0 }) })
}

async function thrown(work: () => Promise<unknown>): Promise<unknown> {
  try {
    await work()
  } catch (error) {
    return error
  }
  throw new Error('expected a failure')
}

const balanceOf = (client: PublicClient) => client.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [token] })
const call = (client: PublicClient) => client.call({ to: token, data: '0x70a08231' })
const estimate = (client: PublicClient) => client.estimateGas({ account: token, to: token, value: 1n })

t.test('blameOf sorts viem\'s errors: the caller\'s call reverting is theirs, the node failing is not', async (t) => {
  const reverted = encodeErrorResult({ abi: parseAbi(['error Error(string)']), errorName: 'Error', args: ['nope'] })
  const callers = {
    'a revert with its reason (code 3)': await thrown(() => balanceOf(nodeAnswering({ error: { code: 3, message: 'execution reverted: nope', data: reverted } }))),
    'a bare revert (-32000 execution reverted)': await thrown(() => call(nodeAnswering({ error: { code: -32000, message: 'execution reverted' } }))),
    'a call from an account short of ETH': await thrown(() => estimate(nodeAnswering({ error: { code: -32000, message: 'insufficient funds for gas * price + value' } }))),
    'a function the address does not have (no data)': await thrown(() => balanceOf(nodeAnswering({ result: '0x' }))),
    'a revert answered as -32603 with revert data': await thrown(() => balanceOf(nodeAnswering({ error: { code: -32603, message: 'reverted', data: reverted } }))),
  }
  for (const [what, error] of Object.entries(callers)) {
    const blame = blameOf(error)
    t.equal(blame.side, 'caller', what)
    t.notMatch(blame.message, /URL|Request body|127\.0\.0\.1/, `${what}: viem's short message, no request details`)
  }
  t.match(blameOf(callers['a revert with its reason (code 3)']).message, /nope/)

  const chains = {
    'the node\'s internal error on a read (-32603, no revert data)': await thrown(() => balanceOf(nodeAnswering({ error: { code: -32603, message: 'internal error' } }))),
    'the node\'s internal error (InternalRpcError)': await thrown(() => nodeAnswering({ error: { code: -32603, message: 'internal error' } }).getBalance({ address: token })),
    'the node\'s limit (LimitExceededRpcError)': await thrown(() => nodeAnswering({ error: { code: -32005, message: 'rate limited' } }).getBalance({ address: token })),
    'an unknown node answer (UnknownRpcError)': await thrown(() => nodeAnswering({ error: { code: 12345, message: 'what' } }).getBalance({ address: token })),
    'an unreachable node (HttpRequestError)': await thrown(() => createPublicClient({ chain: devnetChain(), transport: http(CLOSED, { retryCount: 0 }) }).getBalance({ address: token })),
    'an unreachable node behind the guard (ChainUnavailableError)': await thrown(() =>
      createPublicClient({ chain: devnetChain(), transport: guardedTransport('local', http(CLOSED, { retryCount: 0 })) }).getBalance({ address: token }),
    ),
    'a call to an unreachable node (CallExecutionError)': await thrown(() => call(createPublicClient({ chain: devnetChain(), transport: http(CLOSED, { retryCount: 0 }) }))),
  }
  for (const [what, error] of Object.entries(chains)) {
    const blame = blameOf(error)
    t.equal(blame.side, 'chain', what)
    t.match(blame.message, /try again later$/, `${what}: says to try again`)
    t.notMatch(blame.message, /rpc-secret-key|127\.0\.0\.1/, `${what}: never the URL`)
  }
  t.match(blameOf(chains['an unreachable node behind the guard (ChainUnavailableError)']).message, /^chain "local" is unavailable: the RPC could not be reached; try again later$/)

  t.same(blameOf(new ToolError('payment short')), { side: 'caller', message: 'payment short' })
  t.same(blameOf(new TypeError(`cannot read ${CLOSED}`)), { side: 'bruno', message: 'Internal error' }, 'an unexpected exception is Bruno\'s, its message hidden')
  t.same(blameOf(new BrunoFault('the runner cannot pay for gas')), { side: 'bruno', message: 'the runner cannot pay for gas' })
  t.equal(blameOf(await thrown(() => balanceOf(nodeAnswering({ result: '0x1234' })))).side, 'bruno', 'a malformed answer is not the caller\'s')
})

t.test('reportFault: one log line with the id the answer quotes, the URL struck out', async (t) => {
  const lines: string[] = []
  const destination = new Writable({
    write(chunk, _encoding, done) {
      lines.push(...String(chunk).split('\n').filter(Boolean))
      done()
    },
  })
  const log = createLogger({ secrets: [CLOSED], destination })
  const error = await thrown(() => createPublicClient({ chain: devnetChain(), transport: http(CLOSED, { retryCount: 0 }) }).getBalance({ address: token }))
  const fault = reportFault(log, error, blameOf(error), { tool: 'account' })
  t.equal(fault.side, 'chain')
  t.match(fault.correlationId, /^[0-9a-f]{16}$/)
  t.match(fault.message, `(correlation id ${fault.correlationId})`)
  t.equal(lines.length, 1)
  t.match(JSON.parse(lines[0]!), { level: 40, correlationId: fault.correlationId, tool: 'account', side: 'chain' })
  t.notMatch(lines[0]!, /rpc-secret-key/)

  const bug = reportFault(log, new TypeError('x is undefined'), blameOf(new TypeError('x')))
  t.equal(bug.side, 'bruno')
  t.equal(bug.message, `Internal error (correlation id ${bug.correlationId})`)
  t.match(JSON.parse(lines[1]!), { level: 50, correlationId: bug.correlationId, err: { type: 'TypeError', message: 'x is undefined' } })
  t.not(bug.correlationId, fault.correlationId, 'each fault its own id')
})

// Against a devnet: both sides over MCP, REST and JSON-RPC.
const bruno = await startDevnetBruno(t, { groups: ['bruno'] })
const { deployment } = bruno
const mcp = new RawMcpClient(`${bruno.mcpUrl}/bruno`)
const payee = getAddress(bruno.config.networks[0]!.payee)
const usdc = { address: deployment.usdc, name: 'USD Coin', version: '2', chainId: deployment.chainId }
const friend = privateKeyToAccount(generatePrivateKey()).address
const reverting = { to: deployment.usdc, data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [friend, 1n] }) }
const harmless = { to: deployment.usdc, data: encodeFunctionData({ abi: erc20Abi, functionName: 'balanceOf', args: [friend] }) }
const rest = (path: string, body?: unknown) =>
  fetch(`${bruno.server.url}${path}`, body === undefined ? {} : { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
const rpc = (method: string, params: Record<string, unknown>) => postRaw(`${bruno.server.url}/rpc`, { jsonrpc: '2.0', id: 1, method, params })
const logLines = (correlationId: string) => bruno.logs.filter((line) => line.includes(correlationId))
const secrets = [bruno.anvil.rpcUrl.replace(/\/$/, ''), bruno.proxy.url.replace(/\/$/, '')]

t.test('the caller\'s refusals stay isError (REST 4xx, JSON-RPC 1001/1002), with their reason', async (t) => {
  const quote = await mcp.callTool('quote', { chain: 'local', call: reverting, token: 'USDC' })
  t.equal(quote.isError, true, 'a call that reverts: isError')
  t.match(quote.content[0].text, /the call reverted: ERC20: transfer amount exceeds balance/)
  const quoted = await rest('/local/v1/quote', { call: reverting, token: 'USDC' })
  t.equal(quoted.status, 422)
  const body = (await quoted.json()) as { error: { code: string; message: string; correlationId?: string } }
  t.equal(body.error.code, 'refused')
  t.match(body.error.message, /transfer amount exceeds balance/)
  t.equal(body.error.correlationId, undefined, 'a refusal has no correlation id: nothing of Bruno\'s failed')
  const viaRpc = await rpc('bruno_quote', { chain: 'local', call: reverting, token: 'USDC' })
  t.equal(viaRpc.json.error.code, 1001)

  // A short payment: signed for less than the quote.
  const key = generatePrivateKey()
  await mintUsdc(bruno.anvil.rpcUrl, deployment, privateKeyToAccount(key).address, 20_000_000n)
  const price = await mcp.call('quote', { chain: 'local', call: harmless, token: 'USDC', payment: 'authorization' })
  const short = await signTransfer(key, usdc, payee, BigInt(price.amountBaseUnits) / 10n)
  const payment = { token: deployment.usdc, authorization: short.message, signature: short.signature }
  const submitted = await mcp.callTool('submit', { chain: 'local', call: harmless, payment })
  t.equal(submitted.isError, true, 'a short payment: isError')
  t.match(submitted.content[0].text, /below the most the runner could pay/)
  const restSubmit = await rest('/local/v1/submit', { call: harmless, payment })
  t.equal(restSubmit.status, 422)

  // An unknown submission, and an expired authorization.
  const unknown = await mcp.callTool('status', { id: 'no-such-id' })
  t.equal(unknown.isError, true)
  t.equal((await rest('/v1/status/no-such-id')).status, 404)
  const expired = { ...payment, authorization: { ...short.message, validBefore: String(Math.floor(Date.now() / 1000) - 60) } }
  const late = await mcp.callTool('submit', { chain: 'local', call: harmless, payment: expired })
  t.equal(late.isError, true, 'an expired authorization: isError')
  t.equal((await rest('/local/v1/submit', { call: harmless, payment: expired })).status, 422)
  t.notOk(bruno.logs.some((line) => /answered as an internal error/.test(line)), 'no refusal was logged as a fault')
})

t.test('an unexpected exception inside a tool: -32603 with a correlation id (REST 500), not isError', async (t) => {
  const { client } = bruno.server.app.bruno.services.networks.get('local')
  const getBalance = client.getBalance
  // A bug of Bruno's: the message (which here quotes the RPC URL) must reach neither the caller nor a log unscrubbed.
  client.getBalance = async () => {
    throw new TypeError(`cannot read the balance from ${bruno.proxy.url}`)
  }
  t.teardown(() => {
    client.getBalance = getBalance
  })
  const address = friend

  const reply = await mcp.request('tools/call', { name: 'account', arguments: { chain: 'local', address } }, 'account')
  t.equal(reply.status, 200)
  t.equal(reply.json.result, undefined, 'not a tool result')
  t.equal(reply.json.error.code, -32603)
  const { correlationId } = reply.json.error.data
  t.match(correlationId, /^[0-9a-f]{16}$/)
  t.same(reply.json.error, { code: -32603, message: `Internal error (correlation id ${correlationId})`, data: { code: 'internal', correlationId } })
  const lines = logLines(correlationId)
  t.equal(lines.length, 1, 'one log line carries the id')
  t.match(JSON.parse(lines[0]!), { level: 50, correlationId, tool: 'account', side: 'bruno', err: { type: 'TypeError' } })

  const restReply = await rest(`/local/v1/account/${address}`)
  t.equal(restReply.status, 500)
  const restBody = (await restReply.json()) as { error: { code: string; message: string; correlationId: string } }
  t.equal(restBody.error.code, 'internal')
  t.match(restBody.error.correlationId, /^[0-9a-f]{16}$/)
  t.equal(restBody.error.message, `Internal error (correlation id ${restBody.error.correlationId})`)
  t.equal(logLines(restBody.error.correlationId).length, 1)

  const viaRpc = await rpc('bruno_getAccount', { chain: 'local', address })
  t.equal(viaRpc.status, 200)
  t.equal(viaRpc.json.error.code, -32603)
  t.equal(viaRpc.json.error.data.code, 'internal')
  t.equal(logLines(viaRpc.json.error.data.correlationId).length, 1)

  // The official SDK client reads it as the JSON-RPC error it is (a protocol error, not a tool result).
  const agent = new ModernClient({ name: 'bruno-tests-agent', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } })
  await agent.connect(new ModernTransport(new URL(`${bruno.mcpUrl}/bruno`)))
  t.teardown(() => agent.close())
  const failure = (await agent.callTool({ name: 'account', arguments: { chain: 'local', address } }).then(
    () => undefined,
    (error: unknown) => error,
  )) as { code?: number; data?: { correlationId?: string } } | undefined
  t.equal(failure?.code, -32603, 'the SDK client gets -32603')
  t.match(failure?.data?.correlationId, /^[0-9a-f]{16}$/, 'with the correlation id')

  for (const text of [reply.text, JSON.stringify(restBody), viaRpc.text, ...bruno.logs]) {
    t.notOk(
      secrets.some((secret) => text.includes(secret)),
      'no RPC URL in any answer or log line',
    )
  }
})

t.test('a runner that cannot pay for gas is Bruno\'s fault, not the caller\'s short funds', async (t) => {
  const setBalance = (wei: bigint) =>
    fetch(bruno.anvil.rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'anvil_setBalance', params: [deployment.runner.operator.address, `0x${wei.toString(16)}`] }),
    })
  const key = generatePrivateKey()
  await mintUsdc(bruno.anvil.rpcUrl, deployment, privateKeyToAccount(key).address, 20_000_000n)
  const price = await mcp.call('quote', { chain: 'local', call: harmless, token: 'USDC', payment: 'authorization' })
  const fee = await signTransfer(key, usdc, payee, BigInt(price.amountBaseUnits) * 2n)
  const operator = await bruno.server.app.bruno.services.networks.get('local').client.getBalance({ address: deployment.runner.operator.address })
  await setBalance(0n)
  t.teardown(() => setBalance(operator))
  const reply = await mcp.request(
    'tools/call',
    { name: 'submit', arguments: { chain: 'local', call: harmless, payment: { token: deployment.usdc, authorization: fee.message, signature: fee.signature } } },
    'submit',
  )
  t.equal(reply.json.result, undefined, 'not an isError result blaming the caller')
  t.equal(reply.json.error.code, -32603)
  t.match(reply.json.error.message, /^the runner's ETH balance is too low to pay for gas \(correlation id [0-9a-f]{16}\)$/)
  t.equal(reply.json.error.data.code, 'internal')
  t.equal(logLines(reply.json.error.data.correlationId).length, 1)
})
