/**
 * A module resolve hook (node:module `register`): `bruno/plugin` resolves to this Bruno's own
 * core/plugin.ts, from wherever a group's package sits (a path beside the config, a node_modules
 * that has no `bruno` in it). So a group and Bruno share one copy of the API: the `ToolError` a
 * group throws is the class Bruno checks for.
 *
 * @example
 * register(new URL('./pluginApiHook.ts', import.meta.url), { data: { url: new URL('./plugin.ts', import.meta.url).href } })
 */
let apiUrl: string | undefined

// Runs in the loader thread, once, with the `data` given to `register`.
export async function initialize(data: { url: string }): Promise<void> {
  apiUrl = data.url
}

type Resolve = (specifier: string, context: unknown) => Promise<unknown>

export async function resolve(specifier: string, context: unknown, nextResolve: Resolve): Promise<unknown> {
  if (specifier === 'bruno/plugin' && apiUrl) return { url: apiUrl, shortCircuit: true }
  return nextResolve(specifier, context)
}
