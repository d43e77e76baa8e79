import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pino from 'pino'
import t, { type Test } from 'tap'
import { createPublicClient, encodeFunctionData, erc20Abi, getAddress, http, type Address, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { DEVNET_RPC_ENV, devnetConfig } from '../config/devnet.ts'
import type { NetworkConfig } from '../config/schema.ts'
import { Networks } from '../core/chain/networks.ts'
import { startAnvil } from '../core/devnet/anvil.ts'
import { deployDevnet, type DevnetDeployment } from '../core/devnet/deploy.ts'
import { mintUsdc } from '../core/devnet/fund.ts'
import type { RelayContext } from '../core/relay/context.ts'
import { openStore } from '../core/store/openStore.ts'
import { quoteCall } from '../core/relay/quote.ts'
import { RunnerLoop } from '../core/runner/runner.ts'
import { RUNNER_OPERATOR_SET_GAS } from '../core/relay/runnerCall.ts'
import type { SubmitRequest } from '../core/relay/schemas.ts'
import { submitCall } from '../core/relay/submit.ts'
import { devnetPricing, devnetRunners, ledgerViolations, runnerLedger } from '../core/testing/runnerLedger.ts'
import { postgresDatabase, postgresSkip } from './fixtures/postgres.ts'
import { serveReplica, type Replica } from './fixtures/replicaProcess.ts'
import { startRpcGate } from './fixtures/rpcGate.ts'
import { signTransfer } from './fixtures/signedTransfer.ts'
import { waitFor } from './fixtures/waitFor.ts'

// Issue 33: two replicas on one PostgreSQL divide a chain's four lanes, two each, and both send; when one stops, the
// other takes its lanes over once it stops counting as alive. In-process, two runner loops on two store connections
// (each replica's lane locks on one session of its own, as a process holds them), driven pass by pass; the chain automines.
// Then two `bruno serve` processes on two lanes: one killed (SIGKILL), and one paused mid-send past its lock
// (SIGSTOP, as test/replica-fencing.test.ts does for one key): per lane, nonces gap-free, nothing sent twice, none lost.

t.test('two replicas divide four lanes, both send, and the survivor takes the other\'s lanes', { skip: postgresSkip() }, async (t) => {
  const { anvil, deployment, lanes, replica, owned, submitFrom, untilDone } = await inProcessReplicas(t, 3)

  const a = replica()
  await a.runner.wake()
  t.same(owned(a), lanes, 'alone, the first replica owns all four lanes')

  const b = replica()
  await b.runner.wake()
  t.same(owned(b), [], 'the second finds every lane held')
  await a.runner.wake()
  t.same(owned(a), lanes.slice(0, 2), 'two alive: the first gives its last two lanes up')
  await b.runner.wake()
  t.same(owned(b), lanes.slice(2), 'and the second takes them')

  // New work is divided too: a payer's submission goes first to the replica owning the lane its address falls to,
  // and after a second to any replica.
  const fallsToB = await submitFrom(a.context, 2)
  await a.runner.wake()
  t.equal((await a.store.get(fallsToB))!.stage, 'waiting', 'the first replica leaves to the second a submission that falls to the second\'s lane')
  await b.runner.wake()
  const takenByB = (await a.store.get(fallsToB))!
  t.ok(takenByB.stage !== 'waiting' && lanes.slice(2).includes(getAddress(takenByB.transaction!.from!)), 'the second sends it')
  const unclaimed = await submitFrom(a.context, 3)
  await new Promise((resolve) => setTimeout(resolve, 1_100))
  await a.runner.wake()
  const takenByA = (await a.store.get(unclaimed))!
  t.ok(takenByA.stage !== 'waiting' && lanes.slice(0, 2).includes(getAddress(takenByA.transaction!.from!)), 'one the second has not sent within a second, the first sends')
  await untilDone([a, b], [fallsToB, unclaimed])

  // Whichever replica passes first sends what is waiting: six go out through the second, six through the first.
  const first: string[] = []
  for (let index = 0; index < 6; index++) first.push(await submitFrom(a.context))
  await b.runner.wake()
  for (let index = 0; index < 6; index++) first.push(await submitFrom(b.context))
  await a.runner.wake()
  const done = await untilDone([a, b], first)
  const senders = done.map((submission) => getAddress(submission.transaction!.from!))
  t.ok(senders.some((sender) => lanes.slice(0, 2).includes(sender)), 'the first replica\'s lanes sent some')
  t.ok(senders.some((sender) => lanes.slice(2).includes(sender)), 'and the second\'s the others')

  // The second stops (its locks released); once it no longer counts as alive (5 s), the first takes all four lanes.
  await b.runner.stop()
  await a.runner.wake()
  t.same(owned(a), lanes.slice(0, 2), 'the stopped one still counts as alive for a while: no more lanes yet')
  await new Promise((resolve) => setTimeout(resolve, 5_200))
  await a.runner.wake()
  t.same(owned(a), lanes, 'then the survivor owns all four')
  const second: string[] = []
  for (let index = 0; index < 4; index++) second.push(await submitFrom(a.context))
  await untilDone([a], second)

  // On chain: one transaction per submission, each lane's nonces with no gap and none used twice.
  const ledger = await runnerLedger(anvil.rpcUrl, devnetRunners(deployment), devnetPricing(deployment))
  t.equal(ledger.length, 18, 'eighteen runner transactions for eighteen submissions: none sent twice')
  t.same(ledgerViolations(ledger), [], 'none reverted, none spent more than it kept')
  const client = createPublicClient({ transport: http(anvil.rpcUrl) })
  const nonces = await Promise.all(ledger.map((entry) => client.getTransaction({ hash: entry.hash }).then((tx) => ({ from: getAddress(tx.from), nonce: tx.nonce }))))
  for (const lane of lanes) {
    const used = nonces.filter((entry) => entry.from === lane).map((entry) => entry.nonce).sort((x, y) => x - y)
    t.same(used, Array.from({ length: used.length }, (_, index) => index), `${lane}: nonces 0..${used.length - 1}`)
  }
})

t.test('two replicas on three lanes: every lane owned by one of them (two and one), and each lane\'s transaction followed to done', { skip: postgresSkip() }, async (t) => {
  const { lanes, replica, owned, submitFrom, untilDone } = await inProcessReplicas(t, 2)
  const a = replica()
  await a.runner.wake()
  t.same(owned(a), lanes, 'alone, the first replica owns all three lanes')
  // Alone, it sends one submission on each lane; the chain includes them at once, but each is done only once followed.
  const ids = [await submitFrom(a.context, 0), await submitFrom(a.context, 1), await submitFrom(a.context, 2)]
  await a.runner.wake()
  const sent = await Promise.all(ids.map(async (id) => (await a.store.get(id))!))
  t.same(sent.map((submission) => [submission.stage, getAddress(submission.transaction!.from!)]), lanes.map((lane) => ['sending', lane]), 'one sent on each lane')

  const b = replica()
  await b.runner.wake()
  await a.runner.wake()
  await b.runner.wake()
  // Three lanes over two replicas: a share rounded down (one each) would leave the third lane, and what it has in flight, to no one.
  t.same(owned(a), lanes.slice(0, 2), 'the first keeps two lanes')
  t.same(owned(b), lanes.slice(2), 'the second takes the third')
  const done = await untilDone([a, b], ids)
  t.same(done.map((submission) => submission.stage), ['done', 'done', 'done'], 'each lane\'s submission done')
})

t.test('two replica processes on two lanes: each sends on its own; one killed (SIGKILL), the other takes its lane and completes the rest', { skip: postgresSkip() }, async (t) => {
  const { anvil, deployment, env, configPath, lanes, token, payee, client } = await twoLaneDevnet(t)
  const senders = await fundedSenders(anvil.rpcUrl, deployment, 30)
  const submit = async (replica: Replica, sender: (typeof senders)[number]) => {
    const quote = await replica.mcp.call('quote', { chain: 'local', call: sender.call, token: 'USDC', payment: 'authorization' })
    const fee = await signTransfer(sender.key, token, payee, BigInt(quote.amountBaseUnits))
    return (await replica.mcp.call('submit', { chain: 'local', call: sender.call, payment: { token: deployment.usdc, authorization: fee.message, signature: fee.signature } })).id as string
  }
  const allDone = (replica: Replica, ids: string[]) =>
    waitFor(async () => Promise.all(ids.map((id) => replica.mcp.call('status', { id }))), (all) => all.every((status) => status.stage === 'done'), `${ids.length} done`, 60_000, 200)
  /** The lanes a replica has taken, by its lock lines. */
  const taken = (replica: Replica) => replica.logs.filter((line) => line.msg === 'runner key lock taken: this process sends for the key').map((line) => getAddress(line.operator!))

  const replicas = [await serveReplica(t, 'a', configPath, env), await serveReplica(t, 'b', configPath, env)]
  // Each ends up with one lane: the first to start takes both, then gives one up once the other is alive.
  await waitFor(async () => replicas.map((replica) => replica.logs.filter((line) => line.msg?.startsWith('runner gives a lane up')).length + taken(replica).length), (counts) => counts.every((count) => count > 0), 'both replicas to hold a lane', 20_000, 100)
  // Twenty through both; the first is killed at once, whatever of its lane is still in flight.
  const ids: string[] = []
  for (const [index, sender] of senders.slice(0, 20).entries()) ids.push(await submit(replicas[index % 2]!, sender))
  const [killed, survivor] = replicas as [Replica, Replica]
  const killedLanes = taken(killed)
  killed.child.kill('SIGKILL')
  await killed.exited
  for (const sender of senders.slice(20)) ids.push(await submit(survivor, sender))
  // Once the killed one no longer counts as alive (5 s), the survivor takes its lane, and finishes what it left.
  await waitFor(async () => taken(survivor), (lanesTaken) => killedLanes.every((lane) => lanesTaken.includes(lane)), 'the survivor to take the killed one\'s lane', 20_000, 100)
  t.same(new Set(taken(survivor)), new Set(lanes), 'the survivor took the killed one\'s lane too')
  await allDone(survivor, ids)
  const finals = await Promise.all(ids.map((id) => survivor.mcp.call('status', { id })))
  const sendersOf = async (hashes: string[]) => Promise.all(hashes.map(async (hash) => getAddress((await client.getTransaction({ hash: hash as `0x${string}` })).from)))
  t.same(new Set(await sendersOf(finals.map((status) => status.transaction.hash))).size, 2, 'both lanes sent')

  const ledger = await runnerLedger(anvil.rpcUrl, lanes, devnetPricing(deployment))
  t.equal(ledger.length, 30, 'thirty transactions for thirty submissions: none sent twice, none lost')
  t.same(ledgerViolations(ledger), [], 'none reverted, none spent more than it kept')
  const nonces = await Promise.all(ledger.map((entry) => client.getTransaction({ hash: entry.hash }).then((tx) => ({ from: getAddress(tx.from), nonce: tx.nonce }))))
  for (const lane of lanes) {
    const used = nonces.filter((entry) => entry.from === lane).map((entry) => entry.nonce).sort((x, y) => x - y)
    t.same(used, Array.from({ length: used.length }, (_, index) => index), `${lane}: nonces 0..${used.length - 1}, no gap`)
  }
})

t.test('two replica processes on two lanes: one paused mid-send past its lock (SIGSTOP) is fenced out of its lane; the other takes it over, and nothing is sent twice', { skip: postgresSkip() }, async (t) => {
  // The held answer must outlast the pause without timing out (a retry would ask the chain afresh).
  const { anvil, deployment, env, configPath, lanes, token, payee, client } = await twoLaneDevnet(t, (network) => ({ ...network, rpcTimeoutMs: 60_000 }))
  const gate = await startRpcGate(anvil.rpcUrl)
  t.teardown(() => gate.close())
  // Payers fall to the lanes in turn (address modulo 2), those of the stalled round to the first lane: the stalled replica's.
  const senders = await fundedSenders(anvil.rpcUrl, deployment, 12, (index) => (index >= 4 && index < 8 ? 0n : BigInt(index % 2)))
  const ids: string[] = []
  const submit = async (replica: Replica, batch: typeof senders) => {
    for (const sender of batch) {
      const quote = await replica.mcp.call('quote', { chain: 'local', call: sender.call, token: 'USDC', payment: 'authorization' })
      const fee = await signTransfer(sender.key, token, payee, BigInt(quote.amountBaseUnits))
      ids.push((await replica.mcp.call('submit', { chain: 'local', call: sender.call, payment: { token: deployment.usdc, authorization: fee.message, signature: fee.signature } })).id as string)
    }
  }
  const allDone = (replica: Replica) =>
    waitFor(async () => Promise.all(ids.map((id) => replica.mcp.call('status', { id }))), (all) => all.every((status) => status.stage === 'done'), `${ids.length} done`, 60_000, 200)
  const taken = (replica: Replica) => replica.logs.filter((line) => line.msg === 'runner key lock taken: this process sends for the key').map((line) => getAddress(line.operator!))
  const given = (replica: Replica) => replica.logs.filter((line) => line.msg?.startsWith('runner gives a lane up')).map((line) => getAddress(line.operator!))

  // The stale one reads the chain through the gate, the survivor directly; each ends up with one lane.
  const stale = await serveReplica(t, 'stale', configPath, { ...env, [DEVNET_RPC_ENV]: gate.url })
  await waitFor(async () => taken(stale).length, (count) => count === 2, 'the first replica to take both lanes', 20_000, 100)
  const survivor = await serveReplica(t, 'survivor', configPath, { ...env, [DEVNET_RPC_ENV]: anvil.rpcUrl })
  await waitFor(async () => taken(survivor).length, (count) => count === 1, 'the second replica to take a lane', 20_000, 100)
  const staleLane = taken(stale).find((lane) => !given(stale).includes(lane))!
  t.equal(staleLane, lanes[0], 'the first keeps the first lane (it gives its last up)')
  t.equal(taken(survivor)[0], lanes[1], 'and the second takes the other')

  await submit(survivor, senders.slice(0, 4))
  await allDone(survivor)

  // The stale one is stalled in a send's last simulation (a call to the Runner), then paused past its lock session's end.
  const runnerContract = deployment.runner.contract.toLowerCase()
  gate.hold((call) => call.method === 'eth_call' && (call.params?.[0] as { to?: string } | undefined)?.to?.toLowerCase() === runnerContract)
  await submit(survivor, senders.slice(4, 8))
  await waitFor(async () => gate.held, (held) => held > 0, 'the stale replica to simulate a send')
  stale.child.kill('SIGSTOP')
  const pausedAt = Date.now()
  await waitFor(async () => taken(survivor), (lanesTaken) => lanesTaken.includes(staleLane), 'the survivor to take the paused one\'s lane', 30_000, 100)
  await allDone(survivor)

  // Resumed: the stale one acts on the simulation's answer with the nonce and epoch of before.
  gate.open()
  stale.child.kill('SIGCONT')
  await submit(stale, senders.slice(8, 10))
  await submit(survivor, senders.slice(10))
  await allDone(survivor)
  const sentAfterPause = stale.logs.filter((line) => line.msg === 'sent' && line.time! > pausedAt && getAddress(line.operator!) === staleLane)
  t.same(sentAfterPause, [], 'the paused replica sent nothing more on the lane it lost')
  const standsDown = (line: Replica['logs'][number]) => line.msg?.startsWith('runner stands down: it lost ownership of the runner key at epoch 1 to epoch') && getAddress(line.operator!) === staleLane
  const stoodDown = await waitFor(async () => stale.logs.find(standsDown), (line) => line !== undefined, 'the paused replica to stand down on the lane it lost', 30_000, 100)
  t.comment(stoodDown!.msg!)
  t.equal(stale.logs.filter(standsDown).length, 1, 'it stood down on that lane, once, from the epoch it took it at')

  const finals = await Promise.all(ids.map((id) => survivor.mcp.call('status', { id })))
  const ledger = await runnerLedger(anvil.rpcUrl, lanes, devnetPricing(deployment))
  t.same(ledger.map((entry) => entry.hash).sort(), finals.map((status) => status.transaction.hash).sort(), `${ids.length} transactions on chain, the submissions' own, one each: none sent twice, none lost`)
  t.same(ledgerViolations(ledger), [], 'none reverted, none spent more than it kept')
  const nonces = await Promise.all(ledger.map((entry) => client.getTransaction({ hash: entry.hash }).then((tx) => ({ from: getAddress(tx.from), nonce: tx.nonce }))))
  for (const lane of lanes) {
    const used = nonces.filter((entry) => entry.from === lane).map((entry) => entry.nonce).sort((x, y) => x - y)
    t.same(used, Array.from({ length: used.length }, (_, index) => index), `${lane}: nonces 0..${used.length - 1}, none reused, none skipped`)
  }
})

/**
 * In-process replicas on one PostgreSQL database (fresh) and a devnet of `furtherLanes` + 1 lanes: each replica its own
 * store connection and lane locks (one session of its own, as a process holds them) and its runner loop, never started:
 * the test runs passes. The chain automines.
 */
async function inProcessReplicas(t: Test, furtherLanes: number) {
  const pgUrl = await postgresDatabase(t)
  const anvil = await startAnvil()
  t.teardown(() => anvil.stop())
  const deployment = await deployDevnet(anvil.rpcUrl, { lanes: furtherLanes })
  const env: NodeJS.ProcessEnv = { BRUNO_LANES_PG_URL: pgUrl }
  const config = { ...devnetConfig(deployment, env, { port: 0, groups: ['bruno'], pollMs: 100 }), store: { kind: 'postgres' as const, url: { env: 'BRUNO_LANES_PG_URL' } } }
  const keys = [deployment.runner.operator, ...deployment.runner.lanes].map(({ privateKey }) => privateKeyToAccount(privateKey))
  const lanes = keys.map((key) => getAddress(key.address))
  const silent = pino({ level: 'silent' })

  /** One replica (stopped and its store closed at teardown). */
  const replica = () => {
    const storage = openStore(config.store, env)
    const network = new Networks(config, env).get('local')
    const context: RelayContext = { network, store: storage.store, operator: lanes[0]!, spareOperators: lanes.slice(1), laneGas: RUNNER_OPERATOR_SET_GAS, delegates: [], wake: () => {} }
    const runner = new RunnerLoop(
      { ...context, network: { ...network, client: network.runnerClient } },
      keys.map((account) => ({ account, ownership: storage.ownership(network.config, { operator: getAddress(account.address), wake: () => {} }, silent) })),
      silent,
    )
    t.teardown(() => runner.stop().then(() => storage.store.close()))
    return { context, runner, store: storage.store }
  }
  const owned = (one: { runner: RunnerLoop }) => one.runner.lanes().filter((lane) => lane.owned).map((lane) => lane.operator)

  const token = { address: deployment.usdc, name: 'USD Coin', version: '2', chainId: deployment.chainId }
  const payee = getAddress(config.networks[0]!.payee)
  /** A new payer's submission (one whose address falls to lane `fallsTo`, modulo the lanes, when given). */
  const submitFrom = async (context: RelayContext, fallsTo?: number) => {
    let key = generatePrivateKey()
    while (fallsTo !== undefined && BigInt(privateKeyToAccount(key).address) % BigInt(lanes.length) !== BigInt(fallsTo)) key = generatePrivateKey()
    const account = privateKeyToAccount(key).address
    await mintUsdc(anvil.rpcUrl, deployment, account, 5_000_000n)
    const call = { to: deployment.usdc, data: encodeFunctionData({ abi: erc20Abi, functionName: 'balanceOf', args: [account] }) }
    const quote = await quoteCall(context, { call, token: 'USDC', payment: 'authorization' })
    const fee = await signTransfer(key, token, payee, BigInt(quote.amountBaseUnits))
    return (await submitCall(context, { call, payment: { token: deployment.usdc, authorization: fee.message, signature: fee.signature } as SubmitRequest['payment'] })).id
  }
  /** Both (all) replicas pass in turn until every one of `ids` is done (at most 40 rounds); the submissions then. */
  const untilDone = async (replicas: { runner: RunnerLoop; store: { get(id: string): Promise<{ stage: string; transaction?: { from?: Address } } | undefined> } }[], ids: string[]) => {
    for (let pass = 0; pass < 40; pass++) {
      for (const one of replicas) await one.runner.wake()
      const stages = await Promise.all(ids.map(async (id) => (await replicas[0]!.store.get(id))!.stage))
      if (stages.every((stage) => stage === 'done')) return Promise.all(ids.map(async (id) => (await replicas[0]!.store.get(id))!))
    }
    throw new Error('not every submission was done after 40 passes of each replica')
  }
  return { anvil, deployment, lanes, replica, owned, submitFrom, untilDone }
}

/**
 * A devnet with two lanes, and a PostgreSQL config for `bruno serve` replicas written to a file
 * (`network` changing its one network): what the process cases start replicas with and read.
 */
async function twoLaneDevnet(t: Test, network: (config: NetworkConfig) => NetworkConfig = (config) => config) {
  const pgUrl = await postgresDatabase(t)
  const anvil = await startAnvil()
  t.teardown(() => anvil.stop())
  const deployment = await deployDevnet(anvil.rpcUrl, { lanes: 1 })
  const env = { ...process.env, BRUNO_LANES_PG_URL: pgUrl }
  const devnet = devnetConfig(deployment, env, { port: 0, groups: ['bruno'], pollMs: 100 })
  const config = { ...devnet, networks: devnet.networks.map(network), store: { kind: 'postgres' as const, url: { env: 'BRUNO_LANES_PG_URL' } } }
  const dir = mkdtempSync(join(tmpdir(), 'bruno-replica-lanes-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const configPath = join(dir, 'bruno.json')
  writeFileSync(configPath, JSON.stringify(config))
  return {
    anvil,
    deployment,
    env,
    configPath,
    lanes: devnetRunners(deployment),
    token: { address: deployment.usdc, name: 'USD Coin', version: '2', chainId: deployment.chainId },
    payee: getAddress(config.networks[0]!.payee),
    client: createPublicClient({ transport: http(anvil.rpcUrl) }),
  }
}

/**
 * `count` payers holding 5 USDC, each with a paid no-op call (it reads its own balance); payer
 * `index` falls to lane `fallsTo(index)` (its address modulo 2) when that answers one.
 */
async function fundedSenders(rpcUrl: string, deployment: DevnetDeployment, count: number, fallsTo: (index: number) => bigint | undefined = () => undefined) {
  const senders: { key: Hex; call: { to: Address; data: Hex } }[] = []
  for (let index = 0; index < count; index++) {
    const lane = fallsTo(index)
    let key = generatePrivateKey()
    while (lane !== undefined && BigInt(privateKeyToAccount(key).address) % 2n !== lane) key = generatePrivateKey()
    const account = privateKeyToAccount(key).address
    await mintUsdc(rpcUrl, deployment, account, 5_000_000n)
    senders.push({ key, call: { to: deployment.usdc, data: encodeFunctionData({ abi: erc20Abi, functionName: 'balanceOf', args: [account] }) } })
  }
  return senders
}
