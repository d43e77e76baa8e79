import { getAddress } from 'viem'
import type { DevnetDeployment } from '../core/devnet/deploy.ts'
import { parseConfig } from './load.ts'
import type { BrunoConfig, GroupName } from './schema.ts'

/** anvil's account #9, which nothing else uses: the owner of the devnet's `PayeeVault` (and the payee with `refunds: false`). */
export const DEVNET_TREASURY = '0xa0Ee7A142d267C1f36714E4a8F75612F20a79720'

/** The environment variables the devnet's config names for its RPC URL and its runner's key. */
export const DEVNET_RPC_ENV = 'BRUNO_DEVNET_RPC_URL'
export const DEVNET_RUNNER_KEY_ENV = 'BRUNO_DEVNET_RUNNER_KEY'

/** The devnet serves every built-in group, metamask too (a config file enables it: it is not in `groups`' default). */
export const DEVNET_GROUPS: readonly GroupName[] = ['bruno', 'calibur', 'metamask', '3009', 'erc20', 'uniswap']

export interface DevnetConfigOptions {
  readonly port?: number
  /** The bind address; default 127.0.0.1. */
  readonly host?: string
  /** The groups it serves: every built-in one unless given. */
  readonly groups?: readonly GroupName[]
  /** Receives the payments; defaults to the deployment's `PayeeVault`, which refunds each payer what its relay did not cost. */
  readonly payee?: `0x${string}`
  /** false: the payee is `DEVNET_TREASURY`, an account that keeps every payment whole (when `payee` is not given). */
  readonly refunds?: boolean
  /** The SQLite file; defaults to one in memory (the devnet itself forgets everything on exit). */
  readonly storePath?: string
  /** How often the runner looks for work, in ms. */
  readonly pollMs?: number
  /** How long a sent transaction may wait for inclusion before it is replaced, in ms. */
  readonly stuckAfterMs?: number
  /** `GET /readyz`'s block-age limit; 0 (the default) checks only that the chain answers. */
  readonly maxBlockAgeSec?: number
  /** How long a paid x402 request is held (`x402.holdSec`); tests that pause mining set it short. */
  readonly x402HoldSec?: number
}

/**
 * The devnet's `server` section: loopback, and no per-client limit to speak of (one developer,
 * many agents and scripts). Known before the devnet exists, so `--host` and `--port` are checked
 * against it before anything is deployed.
 *
 * @example
 * parseServerConfig(devnetServer({ port: 4000 }))
 */
export function devnetServer(options: Pick<DevnetConfigOptions, 'host' | 'port'> = {}) {
  return { host: options.host ?? '127.0.0.1', port: options.port ?? 3030, rateLimit: { max: 1_000_000 } }
}

/**
 * The config that serves a devnet deployment: one network (`local`, USDC swapping to WETH through
 * the deployed 0.05% pool). A devnet that took a preset's identity (`deployDevnet(…, { as })`) is
 * served by the config an operator writes for that chain: `"preset"`, the RPC URL, the payee and
 * the Runner, nothing else (and it must expand to the very addresses the devnet built). Sets the
 * RPC URL's and the runner keys' environment variables in `env` (the lanes' `BRUNO_DEVNET_RUNNER_KEY_LANE_<n>`).
 *
 * @example
 * const config = devnetConfig(await deployDevnet(anvil.rpcUrl), process.env, { port: 0 })
 */
export function devnetConfig(deployment: DevnetDeployment, env: NodeJS.ProcessEnv, options: DevnetConfigOptions = {}): BrunoConfig {
  env[DEVNET_RPC_ENV] = deployment.rpcUrl
  env[DEVNET_RUNNER_KEY_ENV] = deployment.runner.operator.privateKey
  // The deployment's further lanes (`deployDevnet(…, { lanes })`), one variable each.
  const lanes = deployment.runner.lanes.map(({ privateKey }, index) => {
    const name = `${DEVNET_RUNNER_KEY_ENV}_LANE_${index + 1}`
    env[name] = privateKey
    return { env: name }
  })
  const common = {
    rpcUrl: { env: DEVNET_RPC_ENV },
    // anvil mines only when a transaction arrives: an idle devnet's latest block ages forever.
    maxBlockAgeSec: options.maxBlockAgeSec ?? 0,
    payee: options.payee ?? (options.refunds === false ? DEVNET_TREASURY : deployment.payeeVault),
    // One developer, many agents and scripts on loopback: no per-client admission or simulation
    // bound to speak of (test/admission.test.ts and test/adversarial/refused-simulations.test.ts set their own).
    relay: {
      admission: {
        client: { maxActive: 1_000_000, throttleAfter: 1_000_000, banAfter: 1_000_000 },
        simulations: { atOnce: 1_000, refusedGasPerMinute: 1_000_000_000_000 },
      },
    },
    runner: {
      contract: deployment.runner.contract,
      key: { env: DEVNET_RUNNER_KEY_ENV },
      ...(lanes.length > 0 ? { lanes } : {}),
      pollMs: options.pollMs ?? 200,
      stuckAfterMs: options.stuckAfterMs ?? 5_000,
    },
  }
  const network = deployment.preset
    ? { preset: deployment.preset, ...common }
    : {
        name: 'local',
        chainId: deployment.chainId,
        weth: deployment.weth,
        tokens: [
          {
            symbol: 'USDC',
            address: deployment.usdc,
            decimals: 6,
            swapPath: [{ fee: deployment.uniswap.usdcWethFee, tokenOut: deployment.weth }],
          },
          { symbol: 'WETH', address: deployment.weth, decimals: 18 },
        ],
        uniswap: {
          factory: deployment.uniswap.factory,
          swapRouter02: deployment.uniswap.swapRouter02,
          quoterV2: deployment.uniswap.quoterV2,
        },
        ...common,
      }
  const config = parseConfig(
    {
      server: devnetServer(options),
      store: { path: options.storePath ?? ':memory:' },
      // One developer's agents on loopback share an address: no per-client bound on held x402 requests to speak of.
      x402: { maxHeld: 1_000, ...(options.x402HoldSec === undefined ? {} : { holdSec: options.x402HoldSec }) },
      groups: options.groups ?? DEVNET_GROUPS,
      networks: [network],
    },
    env,
  )
  if (deployment.preset) expectPresetAddresses(config, deployment)
  return config
}

/** A preset devnet's config must name exactly what the devnet built, or its tests prove nothing. */
function expectPresetAddresses(config: BrunoConfig, deployment: DevnetDeployment): void {
  const [network] = config.networks
  const pairs: [string, string, string][] = [
    ['USDC', network!.tokens.find((token) => token.symbol === 'USDC')!.address, deployment.usdc],
    ['WETH', network!.weth, deployment.weth],
    ['uniswap.factory', network!.uniswap.factory, deployment.uniswap.factory],
    ['uniswap.swapRouter02', network!.uniswap.swapRouter02, deployment.uniswap.swapRouter02],
    ['uniswap.quoterV2', network!.uniswap.quoterV2, deployment.uniswap.quoterV2],
  ]
  for (const [what, configured, built] of pairs) {
    if (getAddress(configured) !== getAddress(built)) throw new Error(`devnetConfig: the preset "${deployment.preset}" names ${what} ${configured}, the devnet built it at ${built}`)
  }
}
