import { devnetConfig } from '../../config/devnet.ts'
import { loadConfig } from '../../config/load.ts'
import type { BrunoConfig } from '../../config/schema.ts'
import { startAnvil } from '../devnet/anvil.ts'
import { deployDevnet } from '../devnet/deploy.ts'

/** A config to act on, and what to stop when done (the devnet's chain, if one was started). */
export interface CommandConfig {
  readonly config: BrunoConfig
  readonly devnet: boolean
  stop(): Promise<void>
}

/**
 * The config file at `path`, or with no path the embedded devnet's: anvil started and the
 * contracts deployed, as `bruno serve` does without `--config`.
 *
 * @example
 * const { config, stop } = await configOrDevnet(values.config, process.env)
 * try { … } finally { await stop() }
 */
export async function configOrDevnet(path: string | undefined, env: NodeJS.ProcessEnv): Promise<CommandConfig> {
  if (path) return { config: await loadConfig(path, env), devnet: false, stop: async () => {} }
  const anvil = await startAnvil()
  try {
    return { config: devnetConfig(await deployDevnet(anvil.rpcUrl), env), devnet: true, stop: () => anvil.stop() }
  } catch (error) {
    await anvil.stop()
    throw error
  }
}
