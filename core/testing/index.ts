import { Writable } from 'node:stream'
import { createPublicClient, createTestClient, createWalletClient, http, type Hex, type PublicClient, type WalletClient } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { devnetChain } from '../devnet/chain.ts'
import { devnetConfig, type DevnetConfigOptions } from '../../config/devnet.ts'
import { withDevnetPlugins } from '../../config/loadGroups.ts'
import type { BrunoConfig, GroupName } from '../../config/schema.ts'
import { loadBuiltinGroups } from '../devnet/builtinGroups.ts'
import { startDevnet, type Devnet } from '../devnet/index.ts'
import { createLogger } from '../logger.ts'
import { configuredSecrets } from '../secrets.ts'
import { startServer } from '../server.ts'
import { McpToolClient } from './mcpClient.ts'
import { devnetPricing, ledgerViolations, runnerLedger, type LedgerEntry } from './runnerLedger.ts'

export { McpToolClient, modernHeaders, modernMeta, postRaw, type RawReply } from './mcpClient.ts'
export { devnetPricing, ledgerViolations, runnerLedger, type LedgerEntry, type LedgerPricing } from './runnerLedger.ts'

/** Bruno serving a devnet for a group's tests, with what a test needs at hand. */
export interface ServedDevnet {
  readonly devnet: Devnet
  readonly config: BrunoConfig
  /** `http://127.0.0.1:<port>`: REST under `/<chain>/v1/…`, MCP at `/mcp`. */
  readonly url: string
  /** Every log line Bruno wrote. */
  readonly logs: readonly string[]
  /** A client on `/mcp` (every served group), or on `/mcp/<groups>`. */
  mcp(groups?: readonly string[]): McpToolClient
  /** The chain, read. */
  readonly client: PublicClient
  /** A wallet of `privateKey`'s account on the chain (a demo account's, a fresh one's). */
  wallet(privateKey: Hex): WalletClient
  /** Mines `blocks` blocks now (the devnet mines one per transaction; a test that paused mining resumes here). */
  mine(blocks?: number): Promise<void>
  /** Every transaction Bruno's runner sent so far: what it spent, what the payee received for it. */
  ledger(): Promise<LedgerEntry[]>
  /**
   * The runner's losses so far, in words: a transaction that spent more than its payment was worth,
   * or reverted (beyond `allowedReverts`, the payer voiding its own payment in the same block). A
   * group's tests end with it empty: Bruno's promise, kept for the group's payments.
   */
  violations(allowedReverts?: number): Promise<string[]>
  /** Stops Bruno, then the chain. */
  stop(): Promise<void>
}

/**
 * `bruno/testing`: Bruno serving a fresh devnet in this process, as `npm start -- --plugin <from>`
 * does, on a free loopback port — the built-in groups and `plugins` (paths from `dir`, or package
 * names), each plugin's `devnet` hook run first for its options — with an MCP client, wallets, the
 * chain, mining and the runner's ledger at hand. Needs the devnet's packages (`bruno/devnet`).
 *
 * @example
 * import { serveOnDevnet } from 'bruno/testing'
 * const served = await serveOnDevnet({ plugins: ['./index.ts'] })
 * const mcp = served.mcp(['bruno', 'my-group'])
 * const prepared = await mcp.call('my_batch', { chain: 'local', … })
 * // … sign, submit, poll status …
 * assert.deepEqual(await served.violations(), [])
 * await served.stop()
 */
export async function serveOnDevnet(
  options: Omit<DevnetConfigOptions, 'port'> & { readonly plugins?: readonly string[]; readonly dir?: string; readonly groups?: readonly GroupName[] } = {},
): Promise<ServedDevnet> {
  const dir = options.dir ?? process.cwd()
  const devnet = await startDevnet()
  try {
    const env: NodeJS.ProcessEnv = { ...process.env }
    const withPlugins = await withDevnetPlugins(devnetConfig(devnet.deployment, env, { ...options, port: 0 }), options.plugins ?? [], devnet.deployment, dir)
    const config = options.groups ? { ...withPlugins, groups: [...options.groups] } : withPlugins
    const logs: string[] = []
    const destination = new Writable({
      write(chunk, _encoding, done) {
        logs.push(...String(chunk).split('\n').filter(Boolean))
        done()
      },
    })
    const logger = createLogger({ secrets: configuredSecrets(config, env), destination, level: 'info' })
    const server = await startServer({ config, groups: (await loadBuiltinGroups()).builtinGroups, configDir: dir, logger, env })
    const chain = devnetChain(devnet.deployment.chainId)
    const transport = http(devnet.rpcUrl)
    const client = createPublicClient({ chain, transport, pollingInterval: 50 }) as PublicClient
    const operator = devnet.deployment.runner.operator.address
    const ledger = () => runnerLedger(devnet.rpcUrl, operator, devnetPricing(devnet.deployment))
    return {
      devnet,
      config,
      url: server.url,
      logs,
      mcp: (groups) => new McpToolClient(groups ? `${server.url}/mcp/${groups.join(',')}` : `${server.url}/mcp`),
      client,
      wallet: (privateKey) => createWalletClient({ account: privateKeyToAccount(privateKey), chain, transport }),
      mine: (blocks = 1) => createTestClient({ mode: 'anvil', chain, transport }).mine({ blocks }),
      ledger,
      violations: async (allowedReverts = 0) => ledgerViolations(await ledger(), allowedReverts),
      stop: async () => {
        await server.close()
        await devnet.stop()
      },
    }
  } catch (error) {
    await devnet.stop()
    throw error
  }
}
