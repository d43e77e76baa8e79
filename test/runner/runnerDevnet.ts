import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Test } from 'tap'
import { concat, createPublicClient, createTestClient, encodeFunctionData, erc20Abi, getAddress, hexToBigInt, http, parseTransaction, toHex, type Address, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { devnetConfig, DEVNET_RPC_ENV } from '../../config/devnet.ts'
import type { BrunoConfig, NetworkConfig } from '../../config/schema.ts'
import { Networks } from '../../core/chain/networks.ts'
import { startAnvil, type Anvil } from '../../core/devnet/anvil.ts'
import { deployDevnet, type DevnetDeployment } from '../../core/devnet/deploy.ts'
import { mintUsdc } from '../../core/devnet/fund.ts'
import { createLogger } from '../../core/logger.ts'
import type { RelayContext } from '../../core/relay/context.ts'
import { localOwnership, runnerKeyName, type RunnerOwnership } from '../../core/store/ownership.ts'
import { quoteCall } from '../../core/relay/quote.ts'
import { LaneFunding } from '../../core/runner/laneFunding.ts'
import { RunnerLoop } from '../../core/runner/runner.ts'
import { RUNNER_OPERATOR_SET_GAS } from '../../core/relay/runnerCall.ts'
import { SqliteSubmissionStore } from '../../core/store/sqliteStore.ts'
import type { RelayOutcome } from '../../core/relay/schemas.ts'
import type { Submission } from '../../core/store/store.ts'
import { submitCall } from '../../core/relay/submit.ts'
import { randomAuthorizationNonce, transferWithAuthorizationTypedData } from '../../plugins/3009/typedData.ts'
import { encodeTransfer } from '../../core/plugin.ts'
import type { Delegate } from '../../core/relay/delegate.ts'
import { paymentToken } from '../../core/relay/paymentToken.ts'
import type { SubmitRequest } from '../../core/relay/schemas.ts'
import { encodeSignedExecute } from '../../plugins/calibur/executeCalldata.ts'
import { caliburDelegate, ownCallsBatch, paymentBatch } from '../../plugins/calibur/paymentFirstBatch.ts'
import { caliburTypedData } from '../../plugins/calibur/typedData.ts'
import { startParityProxy, type ParityProxy } from '../fixtures/parityProxy.ts'
import { devnetPricing, devnetRunners, ledgerViolations, runnerLedger, type LedgerEntry } from '../../core/testing/runnerLedger.ts'
import { startChaosProxy, type ChaosProxy } from '../liveness/chaosProxy.ts'
import { CALIBUR_ADDRESS } from '../../plugins/calibur/networkOptions.ts'

// The runner loop (core/runner/) on a real devnet, driven one pass at a time: anvil with the
// real contracts (deployed in under a second), blocks mined by the test (automine off), the relay's
// own operations (quoteCall, submitCall) and a RunnerLoop built as openRelay builds it, without
// Fastify. Bruno reaches the chain through a chaos proxy (rules fail chosen requests) in front of the
// parity proxy (geth's answers where anvil's differ). No timer runs: `pass()` runs one pass and
// resolves when it has ended, so a test states what one pass does. Small and quick, so that
// mutation testing (bench/MUTATION.md) can run these files for each of the runner's mutants.

/** One JSON log line the runner (or the relay) wrote. */
export type LogLine = Record<string, unknown> & { msg: string; level: number }

export interface RunnerDevnetOptions {
  /** Changes the devnet network's config (the runner's and relay's settings) before anything starts. */
  readonly configure?: (network: NetworkConfig) => NetworkConfig
  /** Ownership of the runner key for the first runner (default: the SQLite store's, as openStore gives it). */
  readonly ownership?: (store: SqliteSubmissionStore, key: string) => RunnerOwnership
  /** Further lanes (`runner.lanes`): keys the devnet's Runner allows, each owned as the store gives it. */
  readonly lanes?: number
  /** The key of `runner.treasury` (set it with `configure`): the runner tops its lanes up from it. */
  readonly treasuryKey?: Hex
  /** The clock the treasury's top-ups are timed by (default the wall clock): a test moves it past their throttle and interval. */
  readonly treasuryNow?: () => number
}

export interface RunnerDevnet {
  readonly anvil: Anvil
  readonly deployment: DevnetDeployment
  readonly config: BrunoConfig
  readonly network: NetworkConfig
  /** The relay's context, for quote and submit (the caller's client: not the runner's). */
  readonly context: RelayContext
  readonly store: SqliteSubmissionStore
  /** Between the relay and the parity proxy. */
  readonly chaos: ChaosProxy
  readonly proxy: ParityProxy
  /** The runner loop now (a new one after `restart`). */
  readonly runner: RunnerLoop
  /** The runner EOA. */
  readonly operator: Address
  readonly operatorKey: Hex
  /** Every lane's key, the first (`operator`) first. */
  readonly lanes: readonly Address[]
  /** The runner key's name in the store (its epoch's). */
  readonly runnerKey: string
  readonly payee: Address
  /** Reads and anvil's test methods, straight to anvil. */
  readonly client: ReturnType<typeof createPublicClient>
  readonly testClient: ReturnType<typeof createTestClient>
  /** Every line the runner and the relay logged, parsed. */
  readonly logs: LogLine[]
  /** The log lines whose message matches. */
  logged(message: RegExp): LogLine[]
  /** One runner pass, awaited. */
  pass(): Promise<void>
  /** Mines blocks (the pool's transactions go into the first). */
  mine(blocks?: number): Promise<void>
  /** A fresh account holding `usdc` base units of USDC (default 100 USDC) and no ETH. */
  payer(usdc?: bigint): Promise<{ key: Hex; address: Address }>
  /** A call any account can have made that succeeds: USDC `balanceOf(account)`. */
  readCall(account: Address): { to: Address; data: Hex }
  /**
   * Quotes `call` (default `readCall(payer)`), signs the payment for `amount` (default the quote's)
   * valid until `validBefore`, and submits it with `deadline`. Returns the stored submission.
   */
  submit(payer: { key: Hex; address: Address }, options?: SubmitOptions): Promise<Submission>
  /** The stored submission. */
  get(id: string): Promise<Submission>
  /** The transaction as the node holds it (pool or chain), or undefined. */
  nodeHas(hash: Hex): Promise<boolean>
  /** Stops the runner and builds a new one on the same store: a process restart. */
  restart(ownership?: RunnerOwnership): Promise<RunnerLoop>
  /** The runner's transactions on chain, with what each spent and was paid. */
  ledger(): Promise<LedgerEntry[]>
  /** Declares runner transactions the test expects to revert, and cancellations it expects. */
  allow(reverts: number, cancels?: number): void
}

export interface SubmitOptions {
  readonly call?: { to: Address; data: Hex }
  readonly amount?: bigint
  /** The payment's validBefore (unix seconds; default an hour from now). */
  readonly validBefore?: bigint
  /** The submission's deadline (unix seconds; default the relay's). */
  readonly deadline?: number
}

/**
 * A done submission's outcome with its charge and refund checked — they make the payment, and the devnet's payee (its
 * PayeeVault) refunded some of it — then left out: what remains is compared as it was before refunds.
 */
export function settledOutcome(t: Test, outcome: RelayOutcome | undefined): Omit<RelayOutcome, 'chargedBaseUnits' | 'refundedBaseUnits'> | undefined {
  if (!outcome) return outcome
  const { chargedBaseUnits, refundedBaseUnits, ...rest } = outcome
  t.equal(BigInt(chargedBaseUnits ?? -1) + BigInt(refundedBaseUnits ?? -1), BigInt(outcome.paidBaseUnits), 'charged and refunded make the payment')
  t.ok(BigInt(refundedBaseUnits ?? 0) > 0n, `the payee refunded ${refundedBaseUnits} of ${outcome.paidBaseUnits}`)
  return rest
}

/** What a submission's payment pays the payee, in base units (decimal). */
export const paymentValue = ({ request: { payment } }: Submission): string => ('authorization' in payment ? payment.authorization.value : payment.amountBaseUnits)

/** Decodes a stored transaction's signed bytes. */
export const signed = (submission: Submission) => parseTransaction(submission.transaction!.raw)

/** What a replacement or a cancellation raises a fee to, at least: the fee × (10000 + feeBumpBps) / 10000. */
export const feeBump = (devnet: RunnerDevnet, fee: string) => (BigInt(fee) * BigInt(10_000 + devnet.network.runner.feeBumpBps)) / 10_000n

/** The fees the runner reads now, given the tip it is answered (default the node's): the latest base fee × 1.2 + the tip. */
export async function currentFees(devnet: RunnerDevnet, tip?: bigint) {
  const { baseFeePerGas } = await devnet.client.getBlock({ blockTag: 'latest' })
  const maxPriorityFeePerGas = tip ?? hexToBigInt((await devnet.client.request({ method: 'eth_maxPriorityFeePerGas' })) as Hex)
  return { maxFeePerGas: (baseFeePerGas! * 12n) / 10n + maxPriorityFeePerGas, maxPriorityFeePerGas }
}

/** A base fee (20 gwei) far above the devnet's (well under 1 gwei). */
const HIGH_BASE_FEE = 20_000_000_000n

/** Raises the base fee (one block): the payments quoted before it no longer cover their worst case. Returns the max fee the runner now signs. */
export async function raiseFees(devnet: RunnerDevnet): Promise<bigint> {
  await devnet.testClient.setNextBlockBaseFeePerGas({ baseFeePerGas: HIGH_BASE_FEE })
  await devnet.mine()
  return (await currentFees(devnet)).maxFeePerGas
}

/** Sets the base fee back to `baseFeePerGas` (one block): held payments cover their worst case again. */
export async function lowerFees(devnet: RunnerDevnet, baseFeePerGas: bigint): Promise<void> {
  await devnet.testClient.setNextBlockBaseFeePerGas({ baseFeePerGas })
  await devnet.mine()
}

/** The node answers the runner's `eth_maxPriorityFeePerGas` with `tip` until the rule is removed. */
export const answerTip = (devnet: RunnerDevnet, tip: bigint) => devnet.chaos.rule(`tip ${tip}`, (element) => element.method === 'eth_maxPriorityFeePerGas', { result: toHex(tip) })

/** The signed bytes the runner broadcast so far, in order. */
export const rawBroadcasts = (devnet: RunnerDevnet) => devnet.chaos.seen.filter((seen) => seen.method === 'eth_sendRawTransaction').map((seen) => (seen.params as Hex[])[0]!)

/** The node forgets a pooled transaction (a pool that dropped it). */
export const dropTransaction = (devnet: RunnerDevnet, hash: Hex) => devnet.testClient.dropTransaction({ hash })

/** A 0-value self-transfer signed with the runner's key at `nonce` and sent straight to anvil, as an operator would by hand. */
export async function sendByHand(devnet: RunnerDevnet, nonce: number): Promise<{ raw: Hex; hash: Hex }> {
  const operator = privateKeyToAccount(devnet.operatorKey)
  const raw = await operator.signTransaction({ chainId: devnet.network.chainId, to: operator.address, value: 0n, gas: 21_000n, nonce, maxFeePerGas: 10_000_000_000n, maxPriorityFeePerGas: 1_000_000_000n, type: 'eip1559' })
  return { raw, hash: await devnet.client.sendRawTransaction({ serializedTransaction: raw }) }
}

/** After the block with a submission's cancellation is mined and a pass: failed, cancelled for `why`, at the cancellation's 21,000 gas. */
export async function expectCancelled(t: Test, devnet: RunnerDevnet, id: string, cancel: Hex, why: string): Promise<void> {
  await devnet.mine()
  await devnet.pass()
  const failed = await devnet.get(id)
  t.equal(failed.stage, 'failed')
  t.equal(failed.reason, `cancelled: ${why}`)
  t.equal(failed.transaction!.hash, cancel)
  t.equal(failed.gasUsed, '21000')
}

/**
 * A devnet and a runner loop driven by hand (see the file's head). Everything stops at teardown,
 * where the runner's ledger is read: a runner transaction that reverted or spent more than its
 * payment was worth (beyond what the test allowed) fails the file.
 */
export async function startRunnerDevnet(t: Test, options: RunnerDevnetOptions = {}): Promise<RunnerDevnet> {
  // Each part is stopped at teardown, last started first, even when a later one fails to start.
  const stops: (() => unknown)[] = []
  let ended: () => Promise<void> = async () => {}
  t.teardown(async () => {
    try {
      await ended()
    } finally {
      for (const stop of stops.reverse()) await stop()
    }
  })
  const anvil = await startAnvil()
  stops.push(() => anvil.stop())
  const deployment = await deployDevnet(anvil.rpcUrl, options.lanes ? { lanes: options.lanes } : {})
  const proxy = await startParityProxy(anvil.rpcUrl)
  stops.push(() => proxy.close())
  const chaos = await startChaosProxy(proxy.url)
  stops.push(() => chaos.close())
  const dir = mkdtempSync(join(tmpdir(), 'bruno-runner-'))
  stops.push(() => rmSync(dir, { recursive: true, force: true }))
  const store = new SqliteSubmissionStore(join(dir, 'bruno.sqlite'))
  stops.push(() => store.close())
  const env: NodeJS.ProcessEnv = {}
  const devnet = devnetConfig(deployment, env, { port: 0, groups: ['bruno'], pollMs: 50, stuckAfterMs: 60_000 })
  // The runner's tests sign payments that come within relay.paymentMarginSec while their relay is in flight, to
  // follow its cancellation pass by pass: no time to be included is asked of them (relay.inclusionSec 0, which
  // test/adversarial/expiry-cancel.test.ts covers).
  const asked = devnet.networks.map((network) => ({ ...network, relay: { ...network.relay, inclusionSec: 0 } }))
  const config = { ...devnet, networks: asked.map((network) => (options.configure ? options.configure(network) : network)) }
  env[DEVNET_RPC_ENV] = chaos.url
  const network = config.networks[0]!
  const networks = new Networks(config, env)
  const logs: LogLine[] = []
  // Bruno's own logger: the RPC URLs it was given are scrubbed from every line, as in production.
  const log = createLogger({ level: 'debug', secrets: [chaos.url, proxy.url, anvil.rpcUrl], destination: { write: (line: string) => void logs.push(JSON.parse(line) as LogLine) } })
  const operator = deployment.runner.operator.address
  const runnerKey = runnerKeyName(network.chainId, operator)
  const wakes: number[] = []
  const lanes = devnetRunners(deployment)
  // Quotes and submits simulate from the first lane, the others spare, as openRelay's do.
  const context: RelayContext = {
    network: networks.get(network.name),
    store,
    operator,
    spareOperators: lanes.slice(1),
    laneGas: lanes.length > 1 ? RUNNER_OPERATOR_SET_GAS : 0n,
    delegates: [],
    wake: () => void wakes.push(Date.now()),
  }
  const runnerContext: RelayContext = { ...context, network: { ...context.network, client: context.network.runnerClient } }
  const account = privateKeyToAccount(deployment.runner.operator.privateKey)
  const further = deployment.runner.lanes.map((lane) => {
    const laneAccount = privateKeyToAccount(lane.privateKey)
    return { account: laneAccount, ownership: localOwnership(store, runnerKeyName(network.chainId, laneAccount.address)) }
  })
  const funding = options.treasuryKey && new LaneFunding(runnerContext.network, privateKeyToAccount(options.treasuryKey), log, undefined, options.treasuryNow)
  const newRunner = (ownership: RunnerOwnership) => new RunnerLoop(runnerContext, [{ account, ownership }, ...further], log, undefined, funding)
  let runner = newRunner(options.ownership ? options.ownership(store, runnerKey) : localOwnership(store, runnerKey))

  const client = createPublicClient({ transport: http(anvil.rpcUrl), pollingInterval: 20 })
  const testClient = createTestClient({ mode: 'anvil', transport: http(anvil.rpcUrl) })
  await testClient.setAutomine(false)
  const ledger = () => runnerLedger(anvil.rpcUrl, lanes, devnetPricing(deployment))
  let allowedReverts = 0
  let allowedCancels = 0
  ended = async () => {
    await runner.stop()
    const violations = ledgerViolations(await ledger(), allowedReverts, allowedCancels)
    if (violations.length > 0) throw new Error(`runner ledger: ${violations.join('; ')}`)
  }

  const token = { address: deployment.usdc, name: 'USD Coin', version: '2', chainId: deployment.chainId }
  const payee = getAddress(network.payee)
  const readCall = (account: Address) => ({ to: deployment.usdc, data: encodeFunctionData({ abi: erc20Abi, functionName: 'balanceOf', args: [account] }) })
  const get = async (id: string) => {
    const submission = await store.get(id)
    if (!submission) throw new Error(`no submission ${id}`)
    return submission
  }
  return {
    anvil,
    deployment,
    config,
    network,
    context,
    store,
    chaos,
    proxy,
    get runner() {
      return runner
    },
    operator,
    operatorKey: deployment.runner.operator.privateKey,
    lanes,
    runnerKey,
    payee,
    client,
    testClient,
    logs,
    logged: (message) => logs.filter((line) => message.test(line.msg)),
    pass: () => runner.wake(),
    mine: (blocks = 1) => testClient.mine({ blocks }),
    async payer(usdc = 100_000_000n) {
      const key = generatePrivateKey()
      const address = privateKeyToAccount(key).address
      // The mint's receipt is awaited, so it is mined by itself.
      await testClient.setAutomine(true)
      try {
        await mintUsdc(anvil.rpcUrl, deployment, address, usdc)
      } finally {
        await testClient.setAutomine(false)
      }
      return { key, address }
    },
    readCall,
    async submit(payer, submitOptions = {}) {
      const call = submitOptions.call ?? readCall(payer.address)
      const amount = submitOptions.amount ?? BigInt((await quoteCall(context, { call, token: 'USDC', payment: 'authorization' })).amountBaseUnits)
      const validBefore = submitOptions.validBefore ?? BigInt(Math.floor(Date.now() / 1000) + 3600)
      const account = privateKeyToAccount(payer.key)
      const typedData = transferWithAuthorizationTypedData({ token, from: account.address, to: payee, value: amount, validAfter: 0n, validBefore, nonce: randomAuthorizationNonce() })
      const signature = await account.signTypedData(typedData as never)
      const authorization = Object.fromEntries(Object.entries(typedData.message).map(([name, value]) => [name, String(value)])) as never
      const view = await submitCall(context, {
        call,
        payment: { token: deployment.usdc, authorization, signature },
        ...(submitOptions.deadline === undefined ? {} : { deadline: submitOptions.deadline }),
      })
      return get(view.id)
    },
    get,
    nodeHas: (hash) => client.getTransaction({ hash }).then(() => true, () => false),
    async restart(ownership) {
      await runner.stop()
      runner = newRunner(ownership ?? localOwnership(store, runnerKey))
      return runner
    },
    ledger,
    allow(reverts, cancels = 0) {
      allowedReverts += reverts
      allowedCancels += cancels
    },
  }
}

/**
 * A fresh payer delegated to the devnet's Calibur-compatible delegate (EIP-7702's designator as its
 * code) and its two signed batches, as submit takes them: the payment-only batch paying `amount` USDC
 * to the payee at seq 0, and a batch of its own calls (a balance read) at seq 1, both with `deadline`
 * (0: none). The calibur group's batch reader is put in the relay's context, as the app registers it.
 */
export async function caliburBatchRequest(devnet: RunnerDevnet, deadline: bigint, amount = 10_000_000n): Promise<SubmitRequest> {
  const { network, deployment, context } = devnet
  const readers = context.delegates as Delegate[]
  if (!readers.some((reader) => reader.name === 'Calibur')) {
    readers.push(caliburDelegate({ token: (_chain, token) => paymentToken(context.network, token) }, () => CALIBUR_ADDRESS))
  }
  const account = privateKeyToAccount((await devnet.payer()).key)
  await devnet.testClient.setCode({ address: account.address, bytecode: concat(['0xef0100', CALIBUR_ADDRESS]) })
  const read = devnet.readCall(account.address)
  const leg = encodeTransfer({ token: deployment.usdc, to: devnet.payee, amount })
  const domain = { chainId: network.chainId, account: account.address, salt: toHex(BigInt(CALIBUR_ADDRESS), { size: 32 }) }
  // The Runner as executor: submit refuses a payment batch anyone could run (issue 43, point 5).
  const signedBatch = async (batch: ReturnType<typeof paymentBatch>, nonce: bigint) => {
    const typedData = caliburTypedData({ domain, batch, nonce, deadline, executor: deployment.runner.contract })
    return encodeSignedExecute({ message: typedData.message, signature: await account.signTypedData(typedData as never) })
  }
  const payment = await signedBatch(paymentBatch({ ...leg, to: getAddress(leg.to), data: leg.data as Hex }), 0n)
  const calls = await signedBatch(ownCallsBatch([{ to: read.to, value: '0', data: read.data }]), 1n)
  return { call: { to: account.address, data: calls }, payment: { token: deployment.usdc, amountBaseUnits: amount.toString(), batch: payment } }
}
