import type { startAnvil } from './anvil.ts'
import type { deployDevnet } from './deploy.ts'

/** Why a production install (`npm install --omit=dev`) cannot start the embedded devnet. */
export const DEVNET_NEEDS_DEV_INSTALL =
  'the embedded devnet needs the development install: npm install bruno with dev dependencies, or pass --config'

/** The devnet's entry points, as `bruno serve` and `bruno preflight` start it without `--config`. */
export interface DevnetModules {
  readonly startAnvil: typeof startAnvil
  readonly deployDevnet: typeof deployDevnet
}

/**
 * Imports the devnet's code, only when a command runs without `--config`. Its chain
 * (`@foundry-rs/anvil`) and the contracts it deploys (USDC, WETH9, Uniswap) are development
 * dependencies: a production install serves a config without them, and gets
 * {@link DEVNET_NEEDS_DEV_INSTALL} (naming the missing package) when it asks for the devnet.
 *
 * @example
 * const { startAnvil, deployDevnet } = await loadDevnet()
 * const anvil = await startAnvil()
 * const deployment = await deployDevnet(anvil.rpcUrl)
 */
export async function loadDevnet(): Promise<DevnetModules> {
  try {
    const [anvil, deploy] = await Promise.all([import('./anvil.ts'), import('./deploy.ts')])
    // Finds anvil's binary now (deploy.ts read the contracts' artifacts as it loaded), so a missing
    // package is told before anything starts.
    anvil.anvilBinary()
    return { startAnvil: anvil.startAnvil, deployDevnet: deploy.deployDevnet }
  } catch (error) {
    const code = (error as { code?: unknown }).code
    if (code !== 'MODULE_NOT_FOUND' && code !== 'ERR_MODULE_NOT_FOUND') throw error
    // The package a specifier names: `@scope/name/…` or `name/…`.
    const missing = /Cannot find (?:module|package) '((?:@[^/']+\/)?[^/']+)/.exec((error as Error).message)?.[1]
    throw new Error(`${DEVNET_NEEDS_DEV_INSTALL}${missing ? ` (${missing} is not installed)` : ''}`, { cause: error })
  }
}
