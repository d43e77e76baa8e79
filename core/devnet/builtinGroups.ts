import type { PluginDefinition } from '../plugin.ts'
import type { DevnetDeployment } from './deploy.ts'

/** What `plugins/index.ts` gives the kit: the groups Bruno ships, and their devnet hooks run. */
export interface BuiltinGroups {
  readonly builtinGroups: readonly PluginDefinition[]
  deployBuiltinGroups(deployment: DevnetDeployment): Promise<void>
}

/**
 * The built-in groups for the devnet (`deployDevnet` runs their hooks) and the author's kit
 * (`bruno/testing` serves them), imported when first used rather than statically: core's
 * published declarations then stop at the plugin API and do not reach the built-in tools' own
 * types, and core never imports a plugin. `.ts` in a checkout (tsx), `.js` in the package.
 *
 * @example
 * const { deployBuiltinGroups } = await loadBuiltinGroups()
 */
export async function loadBuiltinGroups(): Promise<BuiltinGroups> {
  const ext = import.meta.url.endsWith('.ts') ? 'ts' : 'js'
  return (await import(new URL(`../../plugins/index.${ext}`, import.meta.url).href)) as BuiltinGroups
}
