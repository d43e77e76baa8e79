import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import solc from 'solc'
import type { Test } from 'tap'
import {
  createPublicClient,
  createTestClient,
  decodeFunctionData,
  getAddress,
  http,
  keccak256,
  parseTransaction,
  parseUnits,
  serializeTransaction,
  type Abi,
  type Address,
  type Hex,
} from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { devnetConfig, DEVNET_RPC_ENV } from '../../config/devnet.ts'
import type { BrunoConfig } from '../../config/schema.ts'
import { runnerAbi } from '../../contracts/abi.ts'
import { compilerSettings } from '../../contracts/build.ts'
import { anvilBinary } from '../../core/devnet/anvil.ts'
import { deployDevnet, type DevnetDeployment } from '../../core/devnet/deploy.ts'
import { mintUsdc } from '../../core/devnet/fund.ts'
import { pathPrice, poolAddress, uniswapV3PoolAbi, type Fraction } from '../../core/chain/tokenPrice.ts'
import { tokenToWei } from '../../core/charge/pricing.ts'
import { startBruno, type TestBruno } from '../fixtures/bruno.ts'
import { RawMcpClient } from '../fixtures/mcpHttp.ts'
import { startParityProxy } from '../fixtures/parityProxy.ts'
import { listenOnLoopback } from '../fixtures/loopbackServer.ts'
import { devnetPricing, ledgerViolations, runnerLedger, type LedgerEntry } from '../../core/testing/runnerLedger.ts'
import { signTransfer } from '../fixtures/signedTransfer.ts'
import { waitFor } from '../fixtures/waitFor.ts'

// The adversarial tests' harness: anvil started with the flags a test needs, the devnet deployed on
// it, and Bruno reaching it through a recorder (every raw transaction the runner broadcasts is kept,
// and a method can be refused while the test changes the chain) in front of the parity proxy.

/** anvil with extra flags (e.g. `--network optimism`), on a free port; `stop` kills it (and so does the process's exit). */
export async function spawnAnvil(extra: readonly string[] = []): Promise<{ rpcUrl: string; stop(): void }> {
  const child = spawn(anvilBinary(), ['--host', '127.0.0.1', '--port', '0', ...extra], { stdio: ['ignore', 'pipe', 'pipe'] })
  const stop = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  }
  process.once('exit', stop)
  const port = await new Promise<number>((resolve, reject) => {
    let out = ''
    const timer = setTimeout(() => reject(new Error(`anvil ${extra.join(' ')}: not listening after 15 s`)), 15_000)
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk
      const found = /Listening on 127\.0\.0\.1:(\d+)/.exec(out)
      if (found) {
        clearTimeout(timer)
        resolve(Number(found[1]))
      }
    })
    child.once('exit', (code) => reject(new Error(`anvil exited with ${code}: ${out}`)))
  }).catch((error: unknown) => {
    stop()
    throw error
  })
  child.stdout!.resume()
  child.stderr!.resume()
  return { rpcUrl: `http://127.0.0.1:${port}`, stop }
}

/** One raw transaction the runner broadcast, decoded. */
export interface SignedRunnerTransaction {
  readonly raw: Hex
  readonly hash: Hex
  readonly nonce: number
  readonly gas: bigint
  readonly maxFeePerGas: bigint
  readonly maxPriorityFeePerGas: bigint
  /** The stipend the call was given (`callGas`). */
  readonly callGas: bigint
  /** The payment's EIP-3009 nonce: which submission this transaction is for. */
  readonly paymentNonce: Hex
  /** The payment's amount in token base units. */
  readonly amount: bigint
}

/** A loopback proxy that keeps every `eth_sendRawTransaction` and can refuse chosen methods. */
export interface Recorder {
  readonly url: string
  /** Every distinct raw transaction broadcast through the proxy (a rebroadcast of the same bytes is not a new one), in order, decoded as Runner relays. */
  readonly sent: SignedRunnerTransaction[]
  /** How many times raw transactions were broadcast, rebroadcasts included. */
  broadcasts(): number
  /** How many requests are in flight: received, not answered yet. */
  inFlight(): number
  /** Refuses `method` (a JSON-RPC error) until `allow`: used to hold the runner back. */
  refuse(method: string): void
  allow(method: string): void
  /** How many requests of `method` were refused so far. */
  refused(method: string): number
  /** Every request passed on, with its answer (for a failing test's diagnosis). */
  readonly trace: { request: unknown; answer: unknown }[]
  close(): Promise<void>
}

export async function startRecorder(target: string): Promise<Recorder> {
  const sent: SignedRunnerTransaction[] = []
  const trace: { request: unknown; answer: unknown }[] = []
  let broadcasts = 0
  let inFlight = 0
  const refusing = new Set<string>()
  const refusedCounts = new Map<string, number>()

  const loopback = await listenOnLoopback((req, res) => {
    inFlight++
    res.once('close', () => inFlight--)
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', async () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown
      const batch = Array.isArray(body)
      const elements = (batch ? body : [body]) as { id?: unknown; method?: string; params?: unknown[] }[]
      const answers = new Map<number, unknown>()
      const onward: number[] = []
      elements.forEach((element, index) => {
        const method = element.method ?? ''
        if (method === 'eth_sendRawTransaction' && typeof element.params?.[0] === 'string') {
          broadcasts++
          const raw = element.params[0] as Hex
          // The runner's own self-transfers (gap fills, cancellations) carry no relay: kept out of `sent`.
          const relay = decodeRunnerTransaction(raw)
          if (relay && !sent.some((transaction) => transaction.hash === relay.hash)) sent.push(relay)
        }
        if (refusing.has(method)) {
          refusedCounts.set(method, (refusedCounts.get(method) ?? 0) + 1)
          answers.set(index, { jsonrpc: '2.0', id: element.id, error: { code: -32000, message: `${method} held back by the test` } })
        } else onward.push(index)
      })
      try {
        if (onward.length > 0) {
          const forwarded = batch ? onward.map((index) => elements[index]) : elements[0]
          const response = await fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(forwarded) })
          const reply = (await response.json()) as unknown
          if (!batch) answers.set(0, reply)
          else {
            const byId = new Map((reply as { id: unknown }[]).map((answer) => [JSON.stringify(answer.id), answer]))
            for (const index of onward) answers.set(index, byId.get(JSON.stringify(elements[index]!.id)))
          }
        }
        elements.forEach((element, index) => trace.push({ request: element, answer: answers.get(index) }))
        const out = JSON.stringify(batch ? elements.map((_, index) => answers.get(index)) : answers.get(0))
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(out)
      } catch {
        res.destroy()
      }
    })
  })
  return {
    url: loopback.url,
    sent,
    broadcasts: () => broadcasts,
    inFlight: () => inFlight,
    trace,
    refuse: (method) => void refusing.add(method),
    allow: (method) => void refusing.delete(method),
    refused: (method) => refusedCounts.get(method) ?? 0,
    close: () => loopback.close(),
  }
}

/** A raw runner transaction's fee fields, gas limit, stipend and payment; undefined for one that is not a `relayWithAuthorization`. */
export function decodeRunnerTransaction(raw: Hex): SignedRunnerTransaction | undefined {
  const transaction = parseTransaction(raw)
  if (!transaction.data || transaction.data === '0x') return undefined
  const decoded = decodeFunctionData({ abi: runnerAbi, data: transaction.data })
  if (decoded.functionName !== 'relayWithAuthorization') return undefined
  const [, , callGas, , , amount, authorization] = decoded.args
  return {
    raw,
    hash: keccak256(raw),
    nonce: transaction.nonce!,
    gas: transaction.gas!,
    maxFeePerGas: transaction.maxFeePerGas!,
    maxPriorityFeePerGas: transaction.maxPriorityFeePerGas!,
    callGas,
    paymentNonce: authorization.nonce,
    amount,
  }
}

/** The test contracts of Adversaries.sol, compiled with the project's settings: runtime code and ABI. */
export function compileAdversaries(): Record<string, { abi: Abi; code: Hex }> {
  const source = readFileSync(new URL('./Adversaries.sol', import.meta.url), 'utf8')
  const input = {
    language: 'Solidity',
    sources: { 'Adversaries.sol': { content: source } },
    settings: { ...compilerSettings, outputSelection: { '*': { '*': ['abi', 'evm.deployedBytecode.object'] } } },
  }
  const output = JSON.parse(solc.compile(JSON.stringify(input))) as {
    errors?: { severity: string; formattedMessage: string }[]
    contracts: Record<string, Record<string, { abi: Abi; evm: { deployedBytecode: { object: string } } }>>
  }
  const errors = (output.errors ?? []).filter((error) => error.severity === 'error')
  if (errors.length > 0) throw new Error(errors.map((error) => error.formattedMessage).join('\n'))
  return Object.fromEntries(
    Object.entries(output.contracts['Adversaries.sol']!).map(([name, contract]) => [name, { abi: contract.abi, code: `0x${contract.evm.deployedBytecode.object}` as Hex }]),
  )
}

export interface Harness {
  readonly rpcUrl: string
  readonly deployment: DevnetDeployment
  readonly config: BrunoConfig
  readonly bruno: TestBruno
  readonly mcp: RawMcpClient
  readonly recorder: Recorder
  readonly client: ReturnType<typeof createPublicClient>
  readonly testClient: ReturnType<typeof createTestClient>
  readonly payee: Address
  readonly operator: Address
  /** wei per USDC base unit at the pool's current price. */
  price(): Promise<Fraction>
  /** Every runner transaction included so far, spent and received. */
  ledger(): Promise<LedgerEntry[]>
  /** Declares cancellations (self-transfers at a stuck relay's nonce) the test expects. */
  allowCancellations(count: number): void
  /** A fresh USDC-only payer, funded. */
  payer(usdc?: bigint): Promise<{ key: Hex; address: Address }>
  /** A signed EIP-3009 transfer of `amount` USDC base units from `key` to the payee, as a submit payment. */
  payment(key: Hex, amount: bigint): Promise<{ token: Address; authorization: Record<string, unknown>; signature: Hex }>
  /** Places a contract's runtime code at `address`. */
  place(address: Address, code: Hex): Promise<void>
  /** Writes a storage slot. */
  store(address: Address, slot: bigint, value: bigint): Promise<void>
  /** The latest block's base fee. */
  baseFee(): Promise<bigint>
  /** Mines one block whose base fee is `wei` (what pends and pays that much is included). */
  mineAtBaseFee(wei: bigint): Promise<void>
}

/**
 * A devnet (anvil with `anvilArgs`) and Bruno serving it through the recorder and the parity proxy.
 * With `holdRunner`, the runner cannot start (its first read, `eth_getTransactionCount`, is refused)
 * until the test calls `recorder.allow('eth_getTransactionCount')`: submissions are accepted and wait.
 * At teardown the runner's ledger must hold (no reverted transaction, none spending more than it was paid).
 */
export async function startHarness(
  t: Test,
  options: { anvilArgs?: readonly string[]; pollMs?: number; stuckAfterMs?: number; holdRunner?: boolean; configure?: (config: BrunoConfig) => BrunoConfig; before?: (rpcUrl: string) => Promise<void> } = {},
): Promise<Harness> {
  const { rpcUrl, stop } = await spawnAnvil(options.anvilArgs)
  const deployment = await deployDevnet(rpcUrl)
  await options.before?.(rpcUrl)
  const parity = await startParityProxy(rpcUrl)
  const recorder = await startRecorder(parity.url)
  if (options.holdRunner) recorder.refuse('eth_getTransactionCount')
  const pricing = devnetPricing(deployment)
  const ledger = () => runnerLedger(rpcUrl, deployment.runner.operator.address, pricing)
  let allowedCancels = 0
  // The chain outlives Bruno's last request: read the ledger, then stop everything.
  t.teardown(async () => {
    let entries: LedgerEntry[]
    try {
      entries = await ledger()
    } finally {
      await recorder.close()
      await parity.close()
      stop()
    }
    const violations = ledgerViolations(entries, 0, allowedCancels)
    if (violations.length > 0) throw new Error(`runner ledger: ${violations.join('; ')}`)
  })
  const env = { ...process.env }
  let config = devnetConfig(deployment, env, { port: 0, groups: ['bruno'], pollMs: options.pollMs ?? 100, stuckAfterMs: options.stuckAfterMs ?? 60_000 })
  if (options.configure) config = options.configure(config)
  env[DEVNET_RPC_ENV] = recorder.url
  const bruno = await startBruno(t, config, env, [rpcUrl, parity.url])
  const client = createPublicClient({ transport: http(rpcUrl) })
  const testClient = createTestClient({ mode: 'anvil', transport: http(rpcUrl) })
  const token = { address: deployment.usdc, name: 'USD Coin', version: '2', chainId: deployment.chainId }
  const payee = getAddress(config.networks[0]!.payee)
  const pool = poolAddress(pricing.factory, pricing.usdc, pricing.weth, pricing.fee)
  return {
    rpcUrl,
    deployment,
    config,
    bruno,
    mcp: new RawMcpClient(`${bruno.mcpUrl}/bruno`),
    recorder,
    client,
    testClient,
    payee,
    operator: deployment.runner.operator.address,
    async price() {
      const [sqrtPriceX96] = await client.readContract({ address: pool, abi: uniswapV3PoolAbi, functionName: 'slot0' })
      return pathPrice([{ tokenIn: pricing.usdc, tokenOut: pricing.weth, sqrtPriceX96 }])
    },
    ledger,
    allowCancellations: (count) => {
      allowedCancels += count
    },
    async payer(usdc = 1_000_000_000n) {
      const key = generatePrivateKey()
      const address = privateKeyToAccount(key).address
      await mintUsdc(rpcUrl, deployment, address, usdc)
      return { key, address }
    },
    async payment(key, amount) {
      const signed = await signTransfer(key, token, payee, amount)
      return { token: deployment.usdc, authorization: signed.message as unknown as Record<string, unknown>, signature: signed.signature }
    },
    place: (address, code) => testClient.setCode({ address, bytecode: code }),
    store: (address, slot, value) => testClient.setStorageAt({ address, index: `0x${slot.toString(16).padStart(64, '0')}` as Hex, value: `0x${value.toString(16).padStart(64, '0')}` as Hex }),
    async baseFee() {
      return (await client.getBlock({ blockTag: 'latest' })).baseFeePerGas!
    },
    async mineAtBaseFee(wei) {
      await testClient.setNextBlockBaseFeePerGas({ baseFeePerGas: wei })
      await testClient.mine({ blocks: 1 })
    },
  }
}

/** A payment's value in wei at `price`, rounded down (as the ledger values it). */
export function valueWei(amount: bigint, price: Fraction): bigint {
  return tokenToWei(amount, price)
}

/** `a / b` to four places, for the ledger lines. */
export function ratio(a: bigint, b: bigint): string {
  if (b === 0n) return 'inf'
  return (Number((a * 10_000n) / b) / 10_000).toFixed(4)
}

/** A submission the test made: its id, and its payment's nonce and amount (to find what was signed for it). */
export interface Submitted {
  readonly id: string
  readonly paymentNonce: Hex
  readonly amount: bigint
}

export type Call = { readonly to: Address; readonly data: Hex }

/** The relay's tools as a client uses them over MCP, and what the recorder saw signed for a submission. */
export function relayTools(h: Harness) {
  const chain = h.config.networks[0]!.name
  const submit = async (key: Hex, call: Call, amount: bigint): Promise<Submitted> => {
    const payment = await h.payment(key, amount)
    const { id } = await h.mcp.call('submit', { chain, call, payment })
    return { id, paymentNonce: payment.authorization.nonce as Hex, amount }
  }
  return {
    chain,
    quote: (call: Call) => h.mcp.call('quote', { chain, call, token: 'USDC', payment: 'authorization' }),
    submit,
    /** A submit that may be refused: the tool's result. */
    trySubmit: async (key: Hex, call: Call, amount: bigint) => h.mcp.callTool('submit', { chain, call, payment: await h.payment(key, amount) }),
    /**
     * Submits paying the least Bruno accepts: a payment of 1 unit is refused with the amount required,
     * and that amount plus 0.2% is paid (each signed payment's random nonce and signature move the
     * calldata's gas by a few units). Returns the refusal's text too.
     */
    async submitLeast(key: Hex, call: Call): Promise<Submitted & { refusal: string }> {
      const refused = await h.mcp.callTool('submit', { chain, call, payment: await h.payment(key, 1n) })
      if (!refused.isError) throw new Error('a 1-unit payment was accepted')
      const refusal = refused.content[0].text as string
      const required = /below the most the runner could pay for it now, ([\d.]+) USDC/.exec(refusal)
      if (!required) throw new Error(`unexpected refusal: ${refusal}`)
      const least = parseUnits(required[1]!, 6)
      return { ...(await submit(key, call, least + least / 500n)), refusal }
    },
    status: (sent: Submitted) => h.mcp.call('status', { id: sent.id }),
    signedFor: (sent: Submitted): SignedRunnerTransaction[] => h.recorder.sent.filter((transaction) => transaction.paymentNonce === sent.paymentNonce),
    /**
     * Resolves once the runner has looked at `sent` `times` more times and each look is over: a
     * request carrying its payment (the look's simulation), then a later pass's fee read (passes run
     * one at a time, and one with a submission to check starts by reading the fees). A test waits for
     * this before asserting what a look did not do, where a fixed window could hold no look at all.
     */
    async lookedAt(sent: Submitted, times = 1, timeoutMs = 60_000): Promise<void> {
      const needle = sent.paymentNonce.slice(2).toLowerCase()
      const { trace } = h.recorder
      let cursor = trace.length
      for (let look = 1; look <= times; look++) {
        let seen = false
        const over = async () => {
          for (; cursor < trace.length; cursor++) {
            const request = trace[cursor]!.request as { method?: string }
            if (!seen) seen = request.method !== 'eth_sendRawTransaction' && JSON.stringify(request).toLowerCase().includes(needle)
            else if (request.method === 'eth_maxPriorityFeePerGas') {
              cursor++
              return true
            }
          }
          return false
        }
        await waitFor(over, (done) => done, `the runner's look ${look} of ${times} at ${sent.id}, over`, timeoutMs, 50)
      }
    },
    /**
     * Resolves once no pass that read the fees is still before its look at `sent`: nothing is in
     * flight to the node, and the last fee read is followed by a request carrying `sent`'s payment
     * (its simulation, answered). After a change to the chain, a pass that read the fees before it
     * then cannot decide anything about `sent` on those fees any more.
     */
    async passesPast(sent: Submitted, timeoutMs = 60_000): Promise<void> {
      const needle = sent.paymentNonce.slice(2).toLowerCase()
      const { trace } = h.recorder
      const past = async () => {
        if (h.recorder.inFlight() > 0) return false
        let lastFeeRead = -1
        for (let index = trace.length - 1; index >= 0 && lastFeeRead < 0; index--) if ((trace[index]!.request as { method?: string }).method === 'eth_maxPriorityFeePerGas') lastFeeRead = index
        for (let index = lastFeeRead + 1; index < trace.length; index++) {
          const request = trace[index]!.request as { method?: string }
          if (request.method !== 'eth_sendRawTransaction' && JSON.stringify(request).toLowerCase().includes(needle)) return true
        }
        return lastFeeRead < 0
      }
      await waitFor(past, (done) => done, `every pass that read the fees past its look at ${sent.id}`, timeoutMs, 20)
    },
  }
}

/** The unsigned serialization of a signed raw transaction: what OP-stack's GasPriceOracle prices. */
export function unsignedOf(raw: Hex): Hex {
  const { r: _r, s: _s, v: _v, yParity: _yParity, ...unsigned } = parseTransaction(raw)
  return serializeTransaction(unsigned as Parameters<typeof serializeTransaction>[0])
}
