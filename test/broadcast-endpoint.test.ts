import { inspect } from 'node:util'
import t from 'tap'
import { createPublicClient, http, keccak256, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { ConfigError, parseConfig } from '../config/load.ts'
import type { BrunoConfig } from '../config/schema.ts'
import { BroadcastError, Networks } from '../core/chain/networks.ts'
import { startAnvil } from '../core/devnet/anvil.ts'
import { Metrics } from '../core/metrics.ts'
import { configuredSecrets } from '../core/secrets.ts'
import { offlineConfig } from './fixtures/bruno.ts'
import { startFaultProxy, type Fault } from './fixtures/faultProxy.ts'
import { OVERSIZED_DATA, startParityProxy, TX_MAX_SIZE } from './fixtures/parityProxy.ts'

// `runner.broadcastUrl`: signed transactions go to a second endpoint (a revert-protected or
// private-builder one) while reads and simulations stay on `rpcUrl`. Two loopback JSON-RPC
// endpoints (parity proxies) sit in front of one anvil and count what reaches each.

const anvil = await startAnvil()
const rpc = await startParityProxy(anvil.rpcUrl)
const broadcast = await startParityProxy(anvil.rpcUrl)
const faulty = await startFaultProxy(anvil.rpcUrl)
t.teardown(async () => {
  await Promise.all([rpc.close(), broadcast.close(), faulty.close()])
  await anvil.stop()
})

// A private builder's URL carries its API key, here in the path: it must never be quoted.
const API_KEY = 'builder-api-key-7c1e9a4f2b8d6e3a5f0c'
const BROADCAST_URL = `${broadcast.url}${API_KEY}`
const FAULTY_URL = `${faulty.url}${API_KEY}`

// anvil's account #1: it signs plain transfers to SINK.
const SENDER_KEY = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d'
const SINK = '0x000000000000000000000000000000000000dEaD'
const sender = privateKeyToAccount(SENDER_KEY)

function configFor(env: NodeJS.ProcessEnv, broadcastUrl?: string): BrunoConfig {
  const base = offlineConfig(env)
  env.BRUNO_TEST_RPC_URL = rpc.url
  if (broadcastUrl !== undefined) env.BRUNO_TEST_BROADCAST_URL = broadcastUrl
  const network = base.networks[0]!
  const runner = broadcastUrl === undefined ? network.runner : { ...network.runner, broadcastUrl: { env: 'BRUNO_TEST_BROADCAST_URL' } }
  return parseConfig({ ...base, networks: [{ ...network, runner }] }, env)
}

async function transfer(options: { nonceOffset?: number; dataBytes?: number } = {}): Promise<Hex> {
  const nonce = Number(BigInt(await (await fetchRpc(anvil.rpcUrl, 'eth_getTransactionCount', [sender.address, 'pending']))))
  const dataBytes = options.dataBytes ?? 0
  return sender.signTransaction({
    chainId: 31337,
    type: 'eip1559',
    to: SINK,
    value: 1n,
    nonce: nonce + (options.nonceOffset ?? 0),
    gas: dataBytes === 0 ? 21_000n : 7_000_000n,
    maxFeePerGas: 10_000_000_000n,
    maxPriorityFeePerGas: 1_000_000_000n,
    ...(dataBytes > 0 ? { data: `0x${'01'.repeat(dataBytes)}` as Hex } : {}),
  })
}

async function fetchRpc(url: string, method: string, params: unknown[]): Promise<Hex> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) })
  const answer = (await response.json()) as { result?: Hex; error?: { message: string } }
  if (answer.error) throw new Error(answer.error.message)
  return answer.result!
}

/** Everything an error carries that a log line or an answer could print: message, stack, causes, own fields. */
function everythingIn(error: unknown): string {
  return [String(error), (error as Error).stack ?? '', inspect(error, { depth: Infinity, showHidden: true }), JSON.stringify(error)].join('\n')
}

async function sendFailure(send: () => Promise<unknown>): Promise<BroadcastError> {
  try {
    await send()
  } catch (error) {
    if (error instanceof BroadcastError) return error
    throw error
  }
  throw new Error('the send did not fail')
}

t.test('with runner.broadcastUrl, sendRawTransaction goes to the broadcast endpoint; reads stay on rpcUrl', async (t) => {
  const env = { ...process.env }
  const config = configFor(env, BROADCAST_URL)
  t.same(config.networks[0]!.runner.broadcastUrl, { env: 'BRUNO_TEST_BROADCAST_URL', revertProtected: false }, 'the config names the variable; not revert-protected unless it says so')
  const metrics = new Metrics()
  const network = new Networks(config, env, { metrics }).get('local')
  rpc.reset()
  broadcast.reset()

  const raw = await transfer()
  const hash = await network.sendRawTransaction(raw)
  t.equal(hash, keccak256(raw), 'the endpoint answers the transaction hash')
  t.equal(broadcast.forwarded.get('eth_sendRawTransaction'), 1, 'the broadcast endpoint got the transaction')
  t.equal(rpc.forwarded.get('eth_sendRawTransaction'), 0, 'the RPC did not')

  const receipt = await network.client.waitForTransactionReceipt({ hash, pollingInterval: 50 })
  t.equal(receipt.status, 'success', 'the chain included it')
  t.ok(rpc.forwarded.get('eth_getTransactionReceipt') >= 1, 'the receipt was read from rpcUrl')
  t.equal(broadcast.forwarded.total, 1, 'the broadcast endpoint heard nothing else')

  const scraped = await metrics.registry.metrics()
  t.match(scraped, /bruno_rpc_duration_seconds_count\{chain="local",method="eth_sendRawTransaction"\} 1/, 'the send is in the per-chain RPC metrics')
  t.notOk(scraped.includes(API_KEY), 'metrics never carry the URL')
})

t.test('without it, sendRawTransaction goes to rpcUrl', async (t) => {
  const env = { ...process.env }
  const config = configFor(env)
  t.equal(config.networks[0]!.runner.broadcastUrl, undefined, 'optional: no default')
  const network = new Networks(config, env).get('local')
  rpc.reset()
  broadcast.reset()

  const raw = await transfer()
  t.equal(await network.sendRawTransaction(raw), keccak256(raw))
  t.equal(rpc.forwarded.get('eth_sendRawTransaction'), 1, 'the RPC got the transaction')
  t.equal(broadcast.forwarded.total, 0, 'the broadcast endpoint heard nothing')
  t.equal((await network.client.waitForTransactionReceipt({ hash: keccak256(raw), pollingInterval: 50 })).status, 'success')

  const refused = await sendFailure(() => network.sendRawTransaction(raw))
  t.equal(refused.endpoint, 'RPC', 'a failure names the endpoint it came from')
  t.type(refused.code, 'number', `the node's JSON-RPC error: ${refused.message}`)
  t.notOk(everythingIn(refused).includes(rpc.url), 'and never the RPC URL')
})

t.test('a failing broadcast endpoint: the error names the chain and what happened, never the URL', async (t) => {
  const env = { ...process.env }
  const network = new Networks(configFor(env, BROADCAST_URL), env).get('local')

  broadcast.reset()
  const oversized = await sendFailure(async () => network.sendRawTransaction(await transfer({ dataBytes: TX_MAX_SIZE })))
  t.equal(broadcast.refused.get('eth_sendRawTransaction'), 1, 'the endpoint refused an oversized transaction')
  t.equal(oversized.message, `chain "local": the broadcast endpoint refused the transaction: ${OVERSIZED_DATA}`)
  t.same([oversized.chain, oversized.endpoint, oversized.code, oversized.reason], ['local', 'broadcast endpoint', -32000, OVERSIZED_DATA])
  t.equal(oversized.cause, undefined, "viem's error (it quotes the URL) is not kept as the cause")
  t.notOk(everythingIn(oversized).includes(API_KEY), 'nothing in the error quotes the URL')
  const bareViem = await createPublicClient({ transport: http(BROADCAST_URL) })
    .sendRawTransaction({ serializedTransaction: await transfer({ dataBytes: TX_MAX_SIZE }) })
    .then(() => '', everythingIn)
  t.ok(bareViem.includes(API_KEY), "(the same refusal through a bare viem client does quote it: what the guard is for)")

  const stale = await sendFailure(async () => network.sendRawTransaction(await transfer({ nonceOffset: -1 })))
  t.equal(broadcast.forwarded.get('eth_sendRawTransaction'), 1, 'a used nonce reaches the node')
  t.type(stale.code, 'number', `the node's own refusal, with its code: ${stale.message}`)
  t.match(stale.message, /^chain "local": the broadcast endpoint refused the transaction: /)
  t.notOk(everythingIn(stale).includes(API_KEY), 'nothing in the error quotes the URL')

  const faultyEnv = { ...process.env }
  const unreachable = new Networks(configFor(faultyEnv, FAULTY_URL), faultyEnv).get('local')
  const expected: Partial<Record<Fault, RegExp>> = {
    refuse: /^chain "local": the broadcast endpoint did not take the transaction: the RPC could not be reached$/,
    garbage: /^chain "local": the broadcast endpoint did not take the transaction: the RPC answered something that is not JSON-RPC$/,
    truncate: /^chain "local": the broadcast endpoint did not take the transaction: the RPC connection broke off mid-answer$/,
  }
  for (const [fault, message] of Object.entries(expected) as [Fault, RegExp][]) {
    await faulty.set(fault)
    const error = await sendFailure(async () => unreachable.sendRawTransaction(await transfer()))
    t.match(error.message, message, `${fault}: ${error.message}`)
    t.equal(error.code, undefined, `${fault}: no JSON-RPC code (the endpoint did not answer one)`)
    t.notOk(everythingIn(error).includes(API_KEY), `${fault}: nothing in the error quotes the URL`)
  }
  await faulty.set('none')
})

t.test('the broadcast URL is a secret: scrubbed from logs, its variable checked at load, never quoted', async (t) => {
  const env = { ...process.env }
  const config = configFor(env, BROADCAST_URL)
  t.ok(configuredSecrets(config, env).includes(BROADCAST_URL), 'the logger is given the broadcast URL to scrub')

  const unset = { ...process.env }
  const withBroadcast = configFor(unset, BROADCAST_URL)
  delete unset.BRUNO_TEST_BROADCAST_URL
  t.throws(() => parseConfig(withBroadcast, unset), new ConfigError('config networks[0].runner.broadcastUrl: environment variable BRUNO_TEST_BROADCAST_URL is not set'))

  const notUrl = { ...process.env }
  const config2 = configFor(notUrl, BROADCAST_URL)
  notUrl.BRUNO_TEST_BROADCAST_URL = `ftp-ish ${API_KEY}`
  t.throws(() => new Networks(config2, notUrl), { message: 'networks.local.runner.broadcastUrl: environment variable BRUNO_TEST_BROADCAST_URL does not hold an http(s) URL' })
  t.throws(() => parseConfig({ ...config, networks: [{ ...config.networks[0]!, runner: { ...config.networks[0]!.runner, broadcastUrl: 'https://builder.example' } }] }, env), ConfigError, 'the config holds a variable name, not a URL')
})
