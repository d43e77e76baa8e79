import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { toFunctionSelector } from 'viem'
import { devnetConfig, DEVNET_RPC_ENV } from '../config/devnet.ts'
import { startAnvil } from '../core/devnet/anvil.ts'
import { deployDevnet } from '../core/devnet/deploy.ts'
import { startBruno } from './fixtures/bruno.ts'
import { RawMcpClient } from './fixtures/mcpHttp.ts'

// A node's own error text never reaches a caller with a secret in it (issue 28, point 6). The node here answers
// every call with an error quoting the RPC URL Bruno was given (its path key, its query key, the URL without
// its scheme), each in another letter case, as a provider's error may. Every answer Bruno gives — MCP, REST and
// JSON-RPC, refusals and faults — is read, and holds none of it in any case.

const PATH_KEY = 'AbCdEf0123456789XyZ'
const QUERY_KEY = 'QueryKey98765abc'
const anvil = await startAnvil()
t.teardown(() => anvil.stop())
const deployment = await deployDevnet(anvil.rpcUrl)
// The node: anvil, except that a pool's price read, every balance read and every nonce read fail with words
// that quote the URL Bruno was given, each part in another letter case.
const SLOT0 = toFunctionSelector('slot0()')
const node = createServer((request, response) => {
  let body = ''
  request.on('data', (chunk) => (body += chunk))
  request.on('end', async () => {
    const quoted = [`execution reverted: see ${rpcUrl.toUpperCase()}`, `upstream 127.0.0.1:${port}/v2/${PATH_KEY.toLowerCase()} refused`, `invalid api key ${QUERY_KEY.toUpperCase()} for /v2/${PATH_KEY}`]
    const answer = async (call: { id: unknown; method: string; params?: { data?: string }[] }) => {
      // Every read of a pool's price (slot0) fails as a revert would, quoting the URL: quote meets it on every binding.
      if (call.method === 'eth_call' && call.params?.[0]?.data?.startsWith(SLOT0)) return { jsonrpc: '2.0', id: call.id, error: { code: 3, message: quoted[0], data: '0x' } }
      if (call.method === 'eth_getBalance') return { jsonrpc: '2.0', id: call.id, error: { code: -32000, message: quoted[1] } }
      if (call.method === 'eth_getTransactionCount') return { jsonrpc: '2.0', id: call.id, error: { code: -32603, message: quoted[2] } }
      const upstream = await fetch(anvil.rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(call) })
      return upstream.json()
    }
    const parsed = JSON.parse(body)
    response.setHeader('content-type', 'application/json')
    response.end(JSON.stringify(Array.isArray(parsed) ? await Promise.all(parsed.map(answer)) : await answer(parsed)))
  })
})
await new Promise<void>((resolve) => node.listen(0, '127.0.0.1', resolve))
t.teardown(() => new Promise<void>((resolve) => node.close(() => resolve())))
const port = (node.address() as AddressInfo).port
const rpcUrl = `http://127.0.0.1:${port}/v2/${PATH_KEY}?apikey=${QUERY_KEY}`

const env: NodeJS.ProcessEnv = {}
const config = { ...devnetConfig(deployment, env, { port: 0 }), groups: ['bruno'] }
env[DEVNET_RPC_ENV] = rpcUrl
const bruno = await startBruno(t, config, env)
const mcp = new RawMcpClient(`${bruno.mcpUrl}/bruno`)
const account = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'
const usdc = deployment.usdc
const call = { to: usdc, data: '0x70a0823100000000000000000000000070997970c51812dc3a010c7d01b50e0d17dc79c8' }
const payment = {
  token: usdc,
  authorization: { from: account, to: config.networks[0]!.payee, value: '1000000', validAfter: '0', validBefore: '4000000000', nonce: `0x${'ab'.repeat(32)}` },
  signature: `0x${'11'.repeat(32)}${'22'.repeat(32)}1b`,
}

async function text(path: string, init?: RequestInit): Promise<string> {
  return (await fetch(`${bruno.server.url}${path}`, init)).text()
}
const post = (path: string, body: unknown) => text(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
const rpc = (method: string, params: unknown) => post('/rpc', { jsonrpc: '2.0', id: 1, method, params })
const tool = async (name: string, args: Record<string, unknown>) => JSON.stringify(await mcp.callTool(name, args).catch((error: unknown) => ({ thrown: String(error) })))

t.test('every binding\'s answer to a node that quotes its URL and keys: none of it, in any case', async (t) => {
  const answers = [
    await text(`/local/v1/account/${account}`),
    await post('/local/v1/quote', { call, token: 'USDC' }),
    await post('/local/v1/submit', { call, payment }),
    await rpc('bruno_getAccount', { chain: 'local', address: account }),
    await rpc('bruno_quote', { chain: 'local', call, token: 'USDC' }),
    await rpc('bruno_sendTransaction', { chain: 'local', call, payment }),
    await tool('account', { chain: 'local', address: account }),
    await tool('quote', { chain: 'local', call, token: 'USDC' }),
    await tool('submit', { chain: 'local', call, payment }),
  ]
  for (const answer of answers) {
    const folded = answer.toLowerCase()
    for (const secret of [PATH_KEY, QUERY_KEY, `127.0.0.1:${port}/v2`]) {
      t.notOk(folded.includes(secret.toLowerCase()), `${secret} not in: ${answer.slice(0, 300)}`)
    }
  }
  // The pool's price read reverting is Bruno's fault (its configured pool), not the caller's: a correlation id, not the node's words.
  const pool = deployment.uniswap.usdcWethPool
  for (const index of [1, 4, 7]) {
    t.match(answers[index], `cannot read the price of the pool ${pool} (${usdc}→${deployment.weth}, fee 500): its slot0() or observe() reverted (correlation id `)
    t.notMatch(answers[index], /see /i, 'none of the node\'s words')
  }
  for (const line of bruno.logs) {
    const folded = line.toLowerCase()
    t.notOk(folded.includes(PATH_KEY.toLowerCase()) || folded.includes(QUERY_KEY.toLowerCase()), 'nor a log line')
  }
})

t.test('the answers\' scrubber strikes a secret whatever carries it: here each binding echoing what it was sent', async (t) => {
  // Nothing of Bruno's passes a node's words to a caller (above); this shows the last guard, on every answer's body.
  const echoes = {
    rest: await post('/local/v1/quote', { call, token: `see-${PATH_KEY.toUpperCase()}` }),
    jsonRpc: await rpc(`bruno_see_${QUERY_KEY.toLowerCase()}`, {}),
    mcp: JSON.stringify((await mcp.request('tools/call', { name: `see_${PATH_KEY}`, arguments: {} }, `see_${PATH_KEY}`)).json),
  }
  for (const [binding, answer] of Object.entries(echoes)) {
    t.match(answer, /see[-_]\[redacted\]/, `${binding} echoed the name, struck out: ${answer.slice(0, 200)}`)
    t.notOk(answer.toLowerCase().includes(PATH_KEY.toLowerCase()) || answer.toLowerCase().includes(QUERY_KEY.toLowerCase()), binding)
  }
})
