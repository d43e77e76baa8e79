import { devnetConfig } from '../../config/devnet.ts'
import { loadCheckedConfig, loadGroups } from '../../config/loadGroups.ts'
import { PRESETS, type PresetName } from '../../config/presets.ts'
import type { BrunoConfig } from '../../config/schema.ts'
import { builtinGroups } from '../../plugins/index.ts'
import type { ServedGroup } from '../tool/groupPlugin.ts'
import { loadDevnet } from '../devnet/load.ts'

/** A config to act on, and what to stop when done (the devnet's chain, if one was started). */
export interface CommandConfig {
  readonly config: BrunoConfig
  /** The groups it serves, loaded as `bruno serve` loads them. */
  readonly groups: readonly ServedGroup[]
  readonly devnet: boolean
  stop(): Promise<void>
}

/**
 * The config file at `path`, checked as `bruno serve` checks it (groups and plugins included), or
 * with no path the embedded devnet's: anvil started and the contracts deployed, as `bruno serve`
 * does without `--config` (`as`: with a preset's identity, as `--as` does).
 *
 * @example
 * const { config, stop } = await configOrDevnet(values.config, process.env)
 * try { … } finally { await stop() }
 */
export async function configOrDevnet(path: string | undefined, env: NodeJS.ProcessEnv, as?: PresetName): Promise<CommandConfig> {
  if (path) return { ...(await loadCheckedConfig(path, env, builtinGroups)), devnet: false, stop: async () => {} }
  const { startAnvil, deployDevnet } = await loadDevnet()
  const anvil = await startAnvil(as ? { chainId: PRESETS[as].chainId } : {})
  try {
    const deployment = await deployDevnet(anvil.rpcUrl, as ? { as } : {})
    const config = devnetConfig(deployment, env)
    return { config, groups: await loadGroups(config, builtinGroups, process.cwd()), devnet: true, stop: () => anvil.stop() }
  } catch (error) {
    await anvil.stop()
    throw error
  }
}
