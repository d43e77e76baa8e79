import type { Test } from 'tap'
import { createPublicClient, encodeFunctionData, erc20Abi, getAddress, http, isAddressEqual, type Address, type Hash, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { devnetConfig, DEVNET_RPC_ENV } from '../../config/devnet.ts'
import type { BrunoConfig } from '../../config/schema.ts'
import { startAnvil } from '../../core/devnet/anvil.ts'
import { deployDevnet } from '../../core/devnet/deploy.ts'
import { mintUsdc } from '../../core/devnet/fund.ts'
import { randomAuthorizationNonce, transferWithAuthorizationTypedData } from '../../plugins/3009/typedData.ts'
import { startBruno } from '../fixtures/bruno.ts'
import type { DevnetBruno } from '../fixtures/devnetBruno.ts'
import { RawMcpClient } from '../fixtures/mcpHttp.ts'
import { startParityProxy } from '../fixtures/parityProxy.ts'
import { devnetPricing, ledgerViolations, runnerLedger } from '../../core/testing/runnerLedger.ts'
import { startChaosProxy, type ChaosProxy, type ChaosRule, type RpcElement } from './chaosProxy.ts'

// Issue 13's devnet: anvil with the real contracts, and Bruno reaching it through a chaos proxy (rules
// that fail chosen requests) in front of the parity proxy (geth's answers where anvil's differ). The
// teardown reads the runner's ledger as startDevnetBruno's does: no reverted runner transaction and no
// cancellation beyond what the test declares, none spending more than its payment was worth.

export interface LivenessBruno extends DevnetBruno {
  /** Between Bruno and the parity proxy: rules fail chosen requests. */
  readonly chaos: ChaosProxy
  /** Set with `holdRunner`: the runner's first nonce read is refused until `release()`. */
  readonly hold?: ChaosRule
  /** Lets a held runner start. */
  release(): void
  /** The MCP client on `/mcp/bruno`. */
  readonly mcp: RawMcpClient
  readonly payee: Address
  readonly runner: Address
  /** Every transaction the runner signed that is on chain, in block order, with its nonce. */
  runnerTransactions(): Promise<RunnerTransaction[]>
  /** A fresh account holding `usdc` base units of USDC and no ETH. */
  payer(usdc?: bigint): Promise<{ key: Hex; address: Address }>
  /** A USDC transfer to the payee signed by `key` (EIP-3009), valid until `validBefore` (default: an hour from now). */
  payment(key: Hex, amount: bigint, validBefore?: bigint): Promise<{ token: Address; authorization: Record<string, string>; signature: Hex }>
  /** A call every payer can make that always succeeds: USDC `balanceOf(account)`. */
  readonly readCall: (account: Address) => { to: Address; data: Hex }
}

export interface RunnerTransaction {
  readonly hash: Hash
  readonly nonce: number
  readonly blockNumber: bigint
  /** A 0-value self-transfer (a cancellation or a nonce filler), or a relay through the Runner. */
  readonly kind: 'relay' | 'cancel'
}

export interface LivenessOptions {
  readonly pollMs?: number
  readonly stuckAfterMs?: number
  /** Refuse the runner's first `eth_getTransactionCount` until `release()`: submissions are accepted and wait. */
  readonly holdRunner?: boolean
  /** Changes the devnet config before Bruno starts (e.g. `runner.maxSendingMs`). */
  readonly configure?: (network: BrunoConfig['networks'][number]) => BrunoConfig['networks'][number]
}

export async function startLivenessBruno(t: Test, options: LivenessOptions = {}): Promise<LivenessBruno> {
  const anvil = await startAnvil()
  const deployment = await deployDevnet(anvil.rpcUrl)
  const proxy = await startParityProxy(anvil.rpcUrl)
  const chaos = await startChaosProxy(proxy.url)
  const runner = deployment.runner.operator.address
  const ledger = () => runnerLedger(anvil.rpcUrl, runner, devnetPricing(deployment))
  let allowedReverts = 0
  let allowedCancels = 0
  t.teardown(async () => {
    let entries
    try {
      entries = await ledger()
    } finally {
      await chaos.close()
      await proxy.close()
      await anvil.stop()
    }
    const violations = ledgerViolations(entries, allowedReverts, allowedCancels)
    if (violations.length > 0) throw new Error(`runner ledger: ${violations.join('; ')}`)
  })
  const hold = options.holdRunner
    ? chaos.rule(
        'hold the runner',
        (element: RpcElement) =>
          element.method === 'eth_getTransactionCount' && Array.isArray(element.params) && typeof element.params[0] === 'string' && isAddressEqual(element.params[0] as Address, runner),
        { error: { code: -32000, message: 'held back by the test' } },
      )
    : undefined
  const env = { ...process.env }
  let config = devnetConfig(deployment, env, { port: 0, groups: ['bruno'], pollMs: options.pollMs ?? 100, stuckAfterMs: options.stuckAfterMs ?? 60_000 })
  if (options.configure) config = { ...config, networks: config.networks.map(options.configure) }
  env[DEVNET_RPC_ENV] = chaos.url
  const bruno = await startBruno(t, config, env, [anvil.rpcUrl, proxy.url, chaos.url])
  const client = createPublicClient({ transport: http(anvil.rpcUrl) })
  const token = { address: deployment.usdc, name: 'USD Coin', version: '2', chainId: deployment.chainId }
  const payee = getAddress(config.networks[0]!.payee)
  return {
    ...bruno,
    anvil,
    deployment,
    proxy,
    chaos,
    ...(hold ? { hold } : {}),
    release: () => {
      if (hold) chaos.remove(hold)
    },
    mcp: new RawMcpClient(`${bruno.mcpUrl}/bruno`),
    payee,
    runner,
    ledger,
    allowRevertedRunnerTransactions: (count) => {
      allowedReverts += count
    },
    allowCancellations: (count) => {
      allowedCancels += count
    },
    async runnerTransactions() {
      const latest = await client.getBlockNumber({ cacheTime: 0 })
      const found: RunnerTransaction[] = []
      for (let number = 0n; number <= latest; number++) {
        const block = await client.getBlock({ blockNumber: number, includeTransactions: true })
        for (const transaction of block.transactions) {
          if (!isAddressEqual(transaction.from, runner)) continue
          const cancel = transaction.to !== null && isAddressEqual(transaction.to, runner) && transaction.value === 0n && transaction.input === '0x'
          found.push({ hash: transaction.hash, nonce: transaction.nonce, blockNumber: number, kind: cancel ? 'cancel' : 'relay' })
        }
      }
      return found
    },
    async payer(usdc = 100_000_000n) {
      const key = generatePrivateKey()
      const address = privateKeyToAccount(key).address
      await mintUsdc(anvil.rpcUrl, deployment, address, usdc)
      return { key, address }
    },
    async payment(key, amount, validBefore) {
      const account = privateKeyToAccount(key)
      const until = validBefore ?? BigInt(Math.floor(Date.now() / 1000) + 3600)
      const typedData = transferWithAuthorizationTypedData({ token, from: account.address, to: payee, value: amount, validAfter: 0n, validBefore: until, nonce: randomAuthorizationNonce() })
      const signature = await account.signTypedData(typedData as never)
      const message = Object.fromEntries(Object.entries(typedData.message).map(([name, value]) => [name, String(value)]))
      return { token: deployment.usdc, authorization: message, signature }
    },
    readCall: (account) => ({ to: deployment.usdc, data: encodeFunctionData({ abi: erc20Abi, functionName: 'balanceOf', args: [account] }) }),
  }
}

/** Whether `nonces` (sorted) run 0, 1, 2, … with no hole and no repeat. */
export function consecutiveFromZero(nonces: readonly number[]): boolean {
  return nonces.every((nonce, index) => nonce === index)
}
