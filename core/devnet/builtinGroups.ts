import type { PluginDefinition } from '../plugin.ts'
import type { DevnetDeployment } from './deploy.ts'

/** What `plugins/index.ts` gives the kit: the groups Bruno ships, and their devnet hooks run. */
export interface BuiltinGroups {
  readonly builtinGroups: readonly PluginDefinition[]
  deployBuiltinGroups(deployment: DevnetDeployment): Promise<void>
}

/**
 * The built-in groups for the author's kit (`bruno/devnet`, `bruno/testing`), imported when first
 * used rather than statically: the kit's published declarations then stop at the plugin API and do
 * not reach the built-in tools' own types. `.ts` in a checkout (tsx), `.js` in the package.
 *
 * @example
 * const { deployBuiltinGroups } = await loadBuiltinGroups()
 */
export async function loadBuiltinGroups(): Promise<BuiltinGroups> {
  const ext = import.meta.url.endsWith('.ts') ? 'ts' : 'js'
  return (await import(new URL(`../../plugins/index.${ext}`, import.meta.url).href)) as BuiltinGroups
}
