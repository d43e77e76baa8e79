import t, { type Test } from 'tap'
import { createPublicClient, createTestClient, encodeFunctionData, getAddress, http, parseSignature } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { mintUsdc } from '../core/devnet/fund.ts'
import { eip3009Abi } from '../plugins/3009/abi.ts'
import { startBruno } from './fixtures/bruno.ts'
import { startDevnetBruno } from './fixtures/devnetBruno.ts'
import { RawMcpClient } from './fixtures/mcpHttp.ts'
import { signTransfer } from './fixtures/signedTransfer.ts'
import { waitFor } from './fixtures/waitFor.ts'
import { configuredSecrets } from '../core/secrets.ts'

// The operator endpoints on a real devnet: /healthz, /readyz, and /metrics after flow 2 (a
// USDC-only account pays with a signed transfer) shows the submission's stages. Every log line
// of the flow is searched for the RPC URL and the runner key.

const bruno = await startDevnetBruno(t, { groups: ['bruno', 'erc20'] })
const { deployment } = bruno
const base = bruno.server.url
const mcp = new RawMcpClient(`${bruno.mcpUrl}/bruno`)
const client = createPublicClient({ transport: http(deployment.rpcUrl) })
const token = { address: deployment.usdc, name: 'USD Coin', version: '2', chainId: deployment.chainId }
const runnerKey = deployment.runner.operator.privateKey
const devnetEnv = { BRUNO_DEVNET_RPC_URL: deployment.rpcUrl, BRUNO_DEVNET_RUNNER_KEY: runnerKey }

/** Prometheus text → `name{label="v",…}` (labels as printed) → value. */
function parseMetrics(text: string): Map<string, number> {
  const samples = new Map<string, number>()
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const at = line.lastIndexOf(' ')
    samples.set(line.slice(0, at), Number(line.slice(at + 1)))
  }
  return samples
}

async function metrics(t: Test) {
  const reply = await fetch(`${base}/metrics`)
  t.equal(reply.status, 200)
  t.match(reply.headers.get('content-type'), /^text\/plain/)
  return parseMetrics(await reply.text())
}

t.test('healthz: the process is up and the store answers', async (t) => {
  const reply = await fetch(`${base}/healthz`)
  t.equal(reply.status, 200)
  t.same(await reply.json(), { ok: true, store: 'ok' })
})

t.test('metrics after flow 2: requests, stages, time to done, runner balance, RPC calls', async (t) => {
  const key = generatePrivateKey()
  const account = privateKeyToAccount(key).address
  const friend = privateKeyToAccount(generatePrivateKey()).address
  const payee = getAddress(bruno.config.networks[0]!.payee)
  await mintUsdc(deployment.rpcUrl, deployment, account, 50_000_000n)
  const gift = await signTransfer(key, token, friend, 10_000_000n)
  const { v, r, s } = parseSignature(gift.signature)
  const call = {
    to: deployment.usdc,
    data: encodeFunctionData({
      abi: eip3009Abi,
      functionName: 'transferWithAuthorization',
      args: [account, friend, 10_000_000n, 0n, BigInt(gift.message.validBefore), gift.message.nonce, Number(v), r, s],
    }),
  }
  const quote = await mcp.call('quote', { chain: 'local', call, token: 'USDC', payment: 'authorization' })
  const fee = await signTransfer(key, token, payee, BigInt(quote.amountBaseUnits))
  const accepted = await mcp.call('submit', { chain: 'local', call, payment: { token: deployment.usdc, authorization: fee.message, signature: fee.signature } })
  const status = await waitFor(() => mcp.call('status', { id: accepted.id }), (status) => status.stage === 'done' || status.stage === 'failed', `submission ${accepted.id} settled`, 30_000)
  t.equal(status.stage, 'done', status.reason)
  const unknownTool = await mcp.request('tools/call', { name: 'no_such_tool', arguments: {} }, 'no_such_tool')
  t.equal(unknownTool.json.error.code, -32602)

  const samples = await metrics(t)
  t.equal(samples.get('bruno_submissions_total{chain="local",stage="waiting"}'), 1)
  t.equal(samples.get('bruno_submissions_total{chain="local",stage="sending"}'), 1)
  t.equal(samples.get('bruno_submissions_total{chain="local",stage="done"}'), 1)
  t.notOk(samples.has('bruno_submissions_total{chain="local",stage="failed"}'))
  t.equal(samples.get('bruno_submission_done_seconds_count{chain="local"}'), 1)
  t.equal(samples.get('bruno_mcp_requests_total{method="tools/call",tool="quote"}'), 1)
  t.equal(samples.get('bruno_mcp_requests_total{method="tools/call",tool="submit"}'), 1)
  t.ok(samples.get('bruno_mcp_requests_total{method="tools/call",tool="status"}')! >= 1)
  t.equal(samples.get('bruno_mcp_errors_total{code="-32602"}'), 1, 'the unknown tool')
  t.equal(samples.get('bruno_mcp_requests_total{method="(error)",tool=""}'), 1, 'its name is not a label')
  t.notOk([...samples.keys()].some((sample) => sample.includes('no_such_tool')))
  const balance = await client.getBalance({ address: deployment.runner.operator.address })
  t.equal(samples.get(`bruno_runner_balance_wei{chain="local",operator="${deployment.runner.operator.address}"}`), Number(balance))
  for (const gauge of ['bruno_runner_lane_in_flight', 'bruno_runner_lane_stuck', 'bruno_runner_lane_short']) {
    t.equal(samples.get(`${gauge}{chain="local",operator="${deployment.runner.operator.address}"}`), 0, `${gauge}: the lane is idle`)
  }
  const nonce = await client.getTransactionCount({ address: deployment.runner.operator.address, blockTag: 'pending' })
  t.ok(nonce > 0, 'the lane has sent')
  t.equal(samples.get(`bruno_runner_lane_next_nonce{chain="local",operator="${deployment.runner.operator.address}"}`), nonce, 'bruno_runner_lane_next_nonce: the nonce after its last transaction')
  t.ok(samples.get('bruno_rpc_duration_seconds_count{chain="local",method="eth_sendRawTransaction"}')! >= 1, 'the runner\'s broadcast was timed')
  t.ok(samples.get('bruno_rpc_duration_seconds_count{chain="local",method="eth_estimateGas"}')! >= 1)
  // Issue 49, point 6: the relay's probe reverts are no node failure; one clean relay counts none of those.
  t.notOk([...samples.keys()].some((sample) => sample.startsWith('bruno_rpc_errors_total')), `no RPC failure after one clean relay: ${[...samples.keys()].filter((sample) => sample.startsWith('bruno_rpc_')).join(', ')}`)
  t.equal(samples.get(`bruno_price_window_seconds{chain="local",pool="${deployment.uniswap.usdcWethPool}"}`), 600, 'the devnet pool, an hour old, priced over the whole window')
})

t.test('a refused tool call counts as a tool error', async (t) => {
  const before = (await metrics(t)).get('bruno_mcp_errors_total{code="tool"}') ?? 0
  const result = await mcp.callTool('status', { id: 'no-such-id' })
  t.equal(result.isError, true)
  t.equal((await metrics(t)).get('bruno_mcp_errors_total{code="tool"}'), before + 1)
})

t.test('a body that is not JSON counts as a parse error', async (t) => {
  const reply = await fetch(bruno.mcpUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{not json' })
  t.equal(reply.status, 400)
  const samples = await metrics(t)
  t.equal(samples.get('bruno_mcp_errors_total{code="-32700"}'), 1)
  t.equal(samples.get('bruno_mcp_requests_total{method="(error)",tool=""}'), 2, 'the unknown tool before, and this one')
})

t.test('readyz: ready with each chain\'s block age; not ready once a block is older than maxBlockAgeSec', async (t) => {
  const ready = await fetch(`${base}/readyz`)
  t.equal(ready.status, 200)
  const body = await ready.json()
  t.equal(body.ready, true)
  t.match(body.chains, [{ chain: 'local', ready: true, blockNumber: String(await client.getBlockNumber()), blockAgeSec: Number }])
  // The runner's one lane, as its loop last saw it: owned here, nothing in flight after flow 2, its next nonce the node's.
  const nonce = await client.getTransactionCount({ address: deployment.runner.operator.address, blockTag: 'pending' })
  t.same(body.chains[0].lanes, [{ operator: deployment.runner.operator.address, owned: true, inFlight: 0, nextNonce: nonce, stuck: false, short: false }])

  // A second Bruno on the same chain, strict about block age; anvil mines only on transactions.
  const network = bruno.config.networks[0]!
  const strict = await startBruno(t, { ...bruno.config, groups: ['erc20'], networks: [{ ...network, maxBlockAgeSec: 1 }] }, devnetEnv)
  await createTestClient({ mode: 'anvil', transport: http(deployment.rpcUrl) }).mine({ blocks: 1 })
  // Nothing is mined from here: wait until the latest block's age passes 1 s and readyz says so.
  const stale = await waitFor(
    async () => {
      const reply = await fetch(`${strict.server.url}/readyz`)
      return { status: reply.status, body: await reply.json() }
    },
    (reply) => reply.status === 503,
    'readyz to report the block too old',
    15_000,
    100,
  )
  t.equal(stale.status, 503)
  const staleBody = stale.body
  t.equal(staleBody.ready, false)
  t.match(staleBody.chains[0].reason, /the latest block is \d+s old \(maxBlockAgeSec 1\)/)
})

t.test('the log: answered requests at debug, refused ones at info; each submission accepted and done at info', async (t) => {
  const lines = bruno.logs.map((line) => JSON.parse(line) as { level: number; msg: string; statusCode?: number; submission?: string })
  const access = lines.filter((line) => line.msg === 'request completed')
  t.ok(access.some((line) => line.statusCode === 200), 'answered requests have their access lines at debug')
  t.same(access.filter((line) => line.statusCode! < 400 && line.level !== 20), [], 'none of them above debug')
  t.ok(access.some((line) => line.statusCode === 400 && line.level === 30), 'the body that was not JSON: at info')
  const accepted = lines.filter((line) => line.msg === 'submission accepted')
  const done = lines.filter((line) => line.msg === 'submission done')
  t.equal(accepted.length, 1)
  t.equal(done.length, 1)
  t.equal(done[0]!.submission, accepted[0]!.submission)
  t.same([accepted[0]!.level, done[0]!.level], [30, 30])
})

t.test('no log line carries the RPC URL or the runner key; the scrubber is on for both', async (t) => {
  bruno.server.app.log.info({ rpc: deployment.rpcUrl, key: runnerKey }, 'a line that would leak both')
  t.same(configuredSecrets(bruno.config, devnetEnv), [deployment.rpcUrl, deployment.rpcUrl.replace(/^http:\/\//, ''), runnerKey.slice(2)], 'the logger is given both secrets (the URL with and without its scheme)')
  t.ok(bruno.logs.length > 10, `the flow logged (${bruno.logs.length} lines)`)
  t.ok(bruno.logs.some((line) => line.includes('"reqId"')), 'request lines carry a request id')
  for (const line of bruno.logs) {
    if (line.includes(deployment.rpcUrl) || line.toLowerCase().includes(runnerKey.slice(2).toLowerCase())) t.fail(`a log line leaks a secret: ${line}`)
  }
  t.ok(bruno.logs.some((line) => line.includes('a line that would leak both') && line.includes('[redacted]')))
})
