import type { DevnetDeployment } from '../core/devnet/deploy.ts'
import { parseConfig } from './load.ts'
import type { BrunoConfig, GroupName } from './schema.ts'

/** The environment variables the devnet's config names for its RPC URL and its runner's key. */
export const DEVNET_RPC_ENV = 'BRUNO_DEVNET_RPC_URL'
export const DEVNET_RUNNER_KEY_ENV = 'BRUNO_DEVNET_RUNNER_KEY'

export interface DevnetConfigOptions {
  readonly port?: number
  readonly groups?: readonly GroupName[]
  /** Receives the payments; defaults to anvil's account #9, which nothing else uses. */
  readonly payee?: `0x${string}`
  /** The SQLite file; defaults to one in memory (the devnet itself forgets everything on exit). */
  readonly storePath?: string
  /** How often the runner looks for work, in ms. */
  readonly pollMs?: number
  /** How long a sent transaction may wait for inclusion before it is replaced, in ms. */
  readonly stuckAfterMs?: number
  /** `GET /readyz`'s block-age limit; 0 (the default) checks only that the chain answers. */
  readonly maxBlockAgeSec?: number
}

/**
 * The config that serves a devnet deployment: one network named `local`, USDC swapping to WETH
 * through the deployed 0.05% pool. Sets the RPC URL's environment variable in `env`.
 *
 * @example
 * const config = devnetConfig(await deployDevnet(anvil.rpcUrl), process.env, { port: 0 })
 */
export function devnetConfig(deployment: DevnetDeployment, env: NodeJS.ProcessEnv, options: DevnetConfigOptions = {}): BrunoConfig {
  env[DEVNET_RPC_ENV] = deployment.rpcUrl
  env[DEVNET_RUNNER_KEY_ENV] = deployment.runner.operator.privateKey
  return parseConfig(
    {
      // One developer, many agents and scripts on loopback: no per-client limit to speak of.
      server: { host: '127.0.0.1', port: options.port ?? 3030, rateLimit: { max: 1_000_000 } },
      store: { path: options.storePath ?? ':memory:' },
      ...(options.groups ? { groups: options.groups } : {}),
      networks: [
        {
          name: 'local',
          chainId: deployment.chainId,
          rpcUrl: { env: DEVNET_RPC_ENV },
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
          calibur: '0x000000005c84F8Fd50b21CAC312528A64437030e',
          // anvil mines only when a transaction arrives: an idle devnet's latest block ages forever.
          maxBlockAgeSec: options.maxBlockAgeSec ?? 0,
          payee: options.payee ?? '0xa0Ee7A142d267C1f36714E4a8F75612F20a79720',
          runner: {
            contract: deployment.runner.contract,
            key: { env: DEVNET_RUNNER_KEY_ENV },
            pollMs: options.pollMs ?? 200,
            stuckAfterMs: options.stuckAfterMs ?? 5_000,
          },
        },
      ],
    },
    env,
  )
}
