import { Writable } from 'node:stream'
import { setImmediate as yieldOnce } from 'node:timers/promises'
import t from 'tap'
import { getAddress, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import type { Networks } from '../../core/chain/networks.ts'
import { createLogger } from '../../core/logger.ts'
import { Metrics } from '../../core/metrics.ts'
import type { Delegate } from '../../core/relay/delegate.ts'
import { openRelay } from '../../core/relayService.ts'
import { ToolError } from '../../core/tool/tool.ts'
import { OFFLINE_RUNNER_KEY, offlineConfig } from '../fixtures/bruno.ts'
import { postgresDatabase, postgresSkip } from '../fixtures/postgres.ts'
import { waitFor } from '../fixtures/waitFor.ts'
import { a, runnerNode, SIGNATURE, type RunnerNodeOptions } from './fakeRunnerNode.ts'
import { fakeDelegate } from '../fixtures/fakeDelegate.ts'

// openRelay (core/relayService.ts): the runner key from the environment, one context per chain
// (its operator the key's address), the operations by chain name, the store's health, the runner
// balances, batch readers shared by every chain, and the runner loops started once and stopped.

const env: NodeJS.ProcessEnv = {}
const config = offlineConfig(env)
const network = config.networks[0]!
const operator = privateKeyToAccount(OFFLINE_RUNNER_KEY).address
const payee = getAddress(network.payee)
const weth = getAddress(network.weth)
const log = createLogger({ secrets: [], level: 'silent' })

function open(options: RunnerNodeOptions = {}, environment: NodeJS.ProcessEnv = env, metrics?: Metrics) {
  const node = runnerNode({ config: network, relay: () => ({ callSucceeded: true, callGasUsed: 160_000n }), estimate: () => 300_000n, ...options })
  const networks = { get: (name: string) => (name === 'local' ? node.network : undefined) } as unknown as Networks
  const relay = openRelay(config, networks, environment, log, metrics)
  return { node, relay }
}

const submitRequest = (value: bigint, nonce = `0x${'ab'.repeat(32)}`) => ({
  call: { to: a(0xc0de), data: '0xabcd' as Hex },
  payment: { token: weth, authorization: { from: a(0xfa7e), to: payee, value: value.toString(), validAfter: '0', validBefore: '4000000000', nonce }, signature: SIGNATURE },
})
const WORST = 315_000n * 1_201_000_000n

t.test('the runner key must be a 32-byte hex private key in the named variable', async (t) => {
  const message = 'networks.local.runner.key: environment variable BRUNO_TEST_RUNNER_KEY must hold a 32-byte hex private key'
  for (const key of [undefined, '', 'not hex at all', OFFLINE_RUNNER_KEY.slice(0, -1), `${OFFLINE_RUNNER_KEY}0`, OFFLINE_RUNNER_KEY.slice(2).padEnd(66, '0')]) {
    t.throws(() => open({}, { BRUNO_TEST_RUNNER_KEY: key }), new Error(message), String(key))
  }
})

t.test('the operations by chain name; the operator is the key’s address', async (t) => {
  const { node, relay } = open()
  t.teardown(() => relay.close())
  t.equal(await relay.ping(), true)
  // submit: simulated from the operator, stored with its client
  const view = await relay.submit('local', submitRequest(WORST), '203.0.113.7')
  t.equal(view.stage, 'waiting')
  t.ok(node.runnerRequests.length > 0)
  for (const request of node.runnerRequests) t.equal(request.from, operator)
  t.strictSame(await relay.status(view.id), view)
  t.equal(await relay.status('no-such-id'), undefined)
  // quote: a zero-address call is priced without an estimate of its own
  const quote = await relay.quote('local', { call: { to: '0x0000000000000000000000000000000000000000', data: '0x' }, token: 'WETH' })
  t.equal(quote.symbol, 'WETH')
  t.equal(quote.feePerGasWei, '1201000000')
  // the runner's balance, read for the operator
  t.strictSame(await relay.runnerBalances(), [{ chain: 'local', operator, wei: 10n ** 18n }])
  const asked = node.seen.filter((request) => request.method === 'eth_getBalance').map((request) => getAddress(request.params[0] as string))
  t.strictSame(asked, [operator])
})

t.test('account: read on the chain named', async (t) => {
  const { relay } = open()
  t.teardown(() => relay.close())
  // the fake node answers no eth_getTransactionCount: the request reaches the chain named (and fails there)
  await t.rejects(relay.account('local', a(0xacc)), /eth_getTransactionCount/)
})

t.test('a chain whose balance cannot be read is left out', async (t) => {
  const { relay } = open({
    balance: () => {
      throw new Error('node down')
    },
  })
  t.teardown(() => relay.close())
  t.strictSame(await relay.runnerBalances(), [])
})

t.test('batch readers are accepted for every chain', async (t) => {
  const { relay } = open()
  t.teardown(() => relay.close())
  const account = a(0xacc)
  const call = { to: account, data: '0xc3c16ee4beef' as Hex }
  const payment = { token: weth, amountBaseUnits: WORST.toString(), batch: '0xc3c16ee4f00d' }
  await t.rejects(relay.submit('local', { call, payment }), new ToolError(
    'refused: a call that pays somewhere inside is not accepted, since it cannot be made safe. Pay one of two ways: ' +
      '{token, authorization, signature}, a signed EIP-3009 transfer to the payee (payment_authorization prepares it), ' +
      'or a delegate batch (no delegate group is enabled on this server)',
  ))
  const given: (Hex | undefined)[] = []
  const reader: Delegate = fakeDelegate({
    errors: { abi: [], describe: () => undefined },
    read: (_network, _call, paymentBatch) => {
      given.push(paymentBatch)
      return {
        account,
        delegate: a(0xde1e),
        target: account,
        paymentData: paymentBatch!,
        paymentGas: 150_000n,
        token: weth,
        payee,
        amount: WORST,
        deadline: 0n,
        identity: 'batch:1',
        ownCalls: { from: account, to: account, data: '0x' },
      }
    },
  })
  relay.acceptDelegate(reader)
  t.equal((await relay.submit('local', { call, payment })).stage, 'waiting')
  t.ok(given.length > 0 && given.every((paymentBatch) => paymentBatch === payment.batch), 'the reader is given the payment\'s batch')
})

t.test('admission refusals are counted with metrics, and still refused without', async (t) => {
  const metrics = new Metrics()
  const { relay } = open({}, env, metrics)
  t.teardown(() => relay.close())
  for (let index = 0; index < 8; index++) await relay.submit('local', submitRequest(WORST, `0x${index.toString(16).padStart(64, '0')}`))
  await t.rejects(relay.submit('local', submitRequest(WORST)), ToolError)
  t.match(await metrics.registry.metrics(), /bruno_admission_refusals_total\{chain="local",reason="account_busy"\} 1/)
})

t.test('the runner loops: started once (a second start leaves no timer behind), stopped at close, the store closed', async (t) => {
  const { relay } = open()
  relay.startRunners()
  relay.startRunners()
  // close stops the one loop's timer: were a second loop started, its timer would keep this process alive
  await relay.close()
  t.equal(await relay.ping(), false, 'the store is closed')
})

t.test('the runner reads through the runner client; the relay and the runner log as themselves', async (t) => {
  const lines: string[] = []
  const logged = createLogger({ secrets: [], level: 'debug', destination: new Writable({ write(chunk, _encoding, done) { lines.push(String(chunk)); done() } }) })
  const node = runnerNode({ config: network, relay: () => ({ callSucceeded: true, callGasUsed: 160_000n }), estimate: () => 300_000n })
  const runnerSide = runnerNode({ config: network })
  const networks = { get: () => ({ ...node.network, runnerClient: runnerSide.client }) } as unknown as Networks
  const relay = openRelay(config, networks, env, logged)
  await relay.submit('local', submitRequest(WORST))
  // the submission wakes the runner, whose first read goes to its own client
  const until = Date.now() + 10_000
  while (runnerSide.seen.length === 0 && Date.now() < until) await yieldOnce()
  await relay.close()
  t.ok(runnerSide.seen.length > 0, 'the runner asked its own client')
  t.notOk(node.seen.some((request) => request.method === 'eth_getTransactionCount'), 'not the callers’ client')
  const records = lines.flatMap((line) => line.split('\n')).filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>)
  t.ok(records.some((record) => record.component === 'relay' && record.msg === 'submission accepted'), 'the store’s log is the relay’s')
  t.ok(records.some((record) => record.component === 'runner' && record.chain === 'local'), 'the runner’s log names its chain')
})

t.test('on PostgreSQL, the runner key lock logs as the runner of its chain', { skip: postgresSkip() }, async (t) => {
  const url = await postgresDatabase(t)
  const lines: string[] = []
  const logged = createLogger({ secrets: [], level: 'info', destination: new Writable({ write(chunk, _encoding, done) { lines.push(String(chunk)); done() } }) })
  const shared = { ...config, store: { kind: 'postgres' as const, url: { env: 'BRUNO_UNIT_RELAY_STORE_URL' } } }
  const node = runnerNode({ config: network, relay: () => ({ callSucceeded: true, callGasUsed: 160_000n }), estimate: () => 300_000n })
  const networks = { get: () => node.network } as unknown as Networks
  const relay = openRelay(shared, networks, { ...env, BRUNO_UNIT_RELAY_STORE_URL: url }, logged)
  const records = () => lines.flatMap((line) => line.split('\n')).filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>)
  const taken = () => records().find((record) => record.msg === 'runner key lock taken: this process sends for the key')
  // the submission wakes the runner, whose pass takes the key's lock first
  await relay.submit('local', submitRequest(WORST))
  const record = await waitFor(async () => taken(), (found) => found !== undefined, 'the lock taken').finally(() => relay.close())
  t.match(record, { chain: 'local', component: 'runner', epoch: 1 }, 'the lock’s lines name the chain and the runner')
})

t.test('an admission refusal without metrics is still the caller’s refusal', async (t) => {
  const { relay } = open()
  t.teardown(() => relay.close())
  for (let index = 0; index < 8; index++) await relay.submit('local', submitRequest(WORST, `0x${index.toString(16).padStart(64, '0')}`))
  await t.rejects(relay.submit('local', submitRequest(WORST)), ToolError)
})

t.test('startRunners starts the loops: the runner passes again on its own timer', async (t) => {
  const quick = { ...config, networks: [{ ...network, runner: { ...network.runner, pollMs: 50 } }] }
  const node = runnerNode({ config: network, relay: () => ({ callSucceeded: true, callGasUsed: 160_000n }), estimate: () => 300_000n })
  const runnerSide = runnerNode({ config: network })
  const networks = { get: () => ({ ...node.network, runnerClient: runnerSide.client }) } as unknown as Networks
  const relay = openRelay(quick, networks, env, log)
  const passes = () => runnerSide.seen.filter((request) => request.method === 'eth_getTransactionCount').length
  const waitFor = async (count: number) => {
    const until = Date.now() + 5_000
    while (passes() < count && Date.now() < until) await yieldOnce()
  }
  // the submission wakes the runner once; its pass fails on this node and backs off
  await relay.submit('local', submitRequest(WORST))
  await waitFor(1)
  t.equal(passes(), 1, 'one pass, woken by the submission')
  relay.startRunners()
  await waitFor(2)
  await relay.close()
  t.ok(passes() >= 2, 'a pass on the loop’s timer')
})
