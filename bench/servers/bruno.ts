import { devnetConfig } from '../../config/devnet.ts'
import { parseConfig } from '../../config/load.ts'
import type { BrunoConfig } from '../../config/schema.ts'
import type { DevnetDeployment } from '../../core/devnet/deploy.ts'
import { bufferedLogDestination, createLogger } from '../../core/logger.ts'
import { configuredSecrets } from '../../core/secrets.ts'
import { startServer } from '../../core/server.ts'
import { builtinGroups } from '../../plugins/index.ts'
import { offlineConfig } from '../../test/fixtures/bruno.ts'
import { serveBenchIpc } from '../child.ts'

// Bruno as `npm start` serves it (logger at info; BENCH_LOG_LEVEL=debug adds the access lines), logs to /dev/null so that
// their cost is counted but no terminal's is. Two configs:
// - offline (default): the chain-free config of the tests; erc20 encoders of configured tokens need no chain;
//   BENCH_GROUPS (comma-separated) serves other groups than its erc20 and uniswap, e.g. all five for the full tools/list;
// - devnet: BENCH_DEVNET holds the deployment (JSON) and BENCH_RPC_URL the RPC URL to use for it
//   (the bench's counting proxy in front of anvil); BENCH_GROUPS, when set, the groups served instead of
//   all five (the x402 bench serves `bruno` alone, as the x402 tests do); BENCH_NETWORK, when set, holds settings of the
//   network's `relay` and `runner` sections (JSON) laid over the devnet's, checked as a config file
//   is (the soak's admission limits and deadlines: bench/soak.ts).

const env = { ...process.env }
const level = env.BENCH_LOG_LEVEL ?? 'info'
let config: BrunoConfig
let secrets: string[] = []
if (env.BENCH_DEVNET) {
  const deployment = JSON.parse(env.BENCH_DEVNET) as DevnetDeployment
  const rpcUrl = env.BENCH_RPC_URL ?? deployment.rpcUrl
  const groups = env.BENCH_GROUPS ? env.BENCH_GROUPS.split(',') : ['bruno', 'calibur', '3009', 'erc20', 'uniswap']
  config = devnetConfig({ ...deployment, rpcUrl }, env, { port: 0, pollMs: 200, groups })
  if (env.BENCH_NETWORK) config = parseConfig({ ...config, networks: config.networks.map((network) => overlay(network, JSON.parse(env.BENCH_NETWORK!))) }, env)
  secrets = configuredSecrets(config, env)
} else {
  config = offlineConfig(env, env.BENCH_GROUPS ? { groups: env.BENCH_GROUPS.split(',') } : {})
}
delete env.BENCH_DEVNET
delete env.BENCH_NETWORK
delete env.BENCH_GROUPS

/** `base` with `patch`'s values laid over it, objects merged key by key. */
function overlay<T>(base: T, patch: unknown): T {
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch) || typeof base !== 'object' || base === null) return patch as T
  const merged: Record<string, unknown> = { ...(base as Record<string, unknown>) }
  for (const [key, value] of Object.entries(patch)) merged[key] = overlay(merged[key], value)
  return merged as T
}

// As the CLI writes its log: buffered (see bufferedLogDestination), here into /dev/null.
const destination = bufferedLogDestination(env.BENCH_LOG_FILE ?? '/dev/null')
const logger = createLogger({ secrets, level, destination })
const server = await startServer({ config, groups: builtinGroups, logger, env })
serveBenchIpc(server.url, async () => {
  await server.close()
  destination.flushSync()
})
