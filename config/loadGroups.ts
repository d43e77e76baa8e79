import { existsSync, readFileSync, statSync } from 'node:fs'
import { register } from 'node:module'
import { dirname, isAbsolute, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import type { TObject } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import type { ServedGroup } from '../core/tool/groupPlugin.ts'
import type { DevnetDeployment, PluginDefinition } from '../core/plugin.ts'
import { badChecksum, ConfigError, loadConfig, type ConfigOverrides } from './load.ts'
import { GroupName, type BrunoConfig, type PluginEntry } from './schema.ts'
import { nearest } from './suggest.ts'

const BRUNO_ROOT = fileURLToPath(new URL('..', import.meta.url))

/**
 * The groups a deployment serves: the built-in ones and those its `plugins` install, each
 * group's options and options on each chain (`networks[].groupOptions`) checked by its own
 * schemas, restricted to the enabled `groups`. Refuses, naming the group, a plugin that cannot be
 * loaded, a duplicate group name, invalid options, options on a chain for a group nothing
 * installs, an enabled group nothing installs and two enabled groups with the same order.
 * Installed groups that are not enabled are loaded and checked, never set up.
 *
 * @example
 * const groups = await loadGroups(config, builtinGroups, dirname(configPath))
 * groups.map((group) => group.definition.name) // ['bruno', 'erc20', 'hello']
 */
export async function loadGroups(config: BrunoConfig, builtins: readonly PluginDefinition[], configDir: string): Promise<ServedGroup[]> {
  const installed = new Map<string, ServedGroup>()
  const install = (group: ServedGroup) => {
    const name = group.definition.name
    const other = installed.get(name)
    if (other) throw new ConfigError(`config ${group.source} (group "${name}"): a group named "${name}" is already installed (${other.source})`)
    installed.set(name, group)
  }
  const served = (definition: PluginDefinition, given: Record<string, unknown> | undefined, source: string, order: number): ServedGroup => ({
    definition,
    options: groupOptions(definition, given, source),
    networkOptions: groupNetworkOptions(definition, config, source),
    order,
    source,
  })
  for (const definition of builtins) install(served(definition, undefined, 'built in', definition.order))
  for (const [index, entry] of config.plugins.entries()) {
    const source = `plugins[${index}]`
    const definition = await importGroup(entry.from, configDir, { field: `config ${source}.from`, base: 'the config file' })
    install(served(definition, entry.options, source, entry.order ?? definition.order))
  }
  config.networks.forEach((network, index) => {
    for (const name of Object.keys(network.groupOptions)) {
      if (installed.has(name)) continue
      const near = nearest(name, [...installed.keys()])
      throw new ConfigError(`config networks[${index}].groupOptions.${name}: no group "${name}" is installed (installed: ${[...installed.keys()].join(', ')})${near ? `; did you mean "${near}"?` : ''}`)
    }
  })

  const enabled = config.groups.map((name) => {
    const group = installed.get(name)
    if (!group) {
      const near = nearest(name, [...installed.keys()])
      throw new ConfigError(`config groups: no group "${name}" is installed (installed: ${[...installed.keys()].join(', ')})${near ? `; did you mean "${near}"?` : ''}`)
    }
    return group
  })
  const byOrder = new Map<number, ServedGroup>()
  for (const group of enabled) {
    const other = byOrder.get(group.order)
    if (other) {
      throw new ConfigError(
        `config groups: group "${group.definition.name}" (${group.source}) has order ${group.order}, as group "${other.definition.name}" ` +
          `(${other.source}) has: give one of them another "order" in its plugins entry`,
      )
    }
    byOrder.set(group.order, group)
  }
  return enabled
}

/** The config's options for a group, defaults filled, checked by the group's schema; never quoted (they may hold secrets). */
function groupOptions(definition: PluginDefinition, given: Record<string, unknown> | undefined, source: string): unknown {
  const at = `config ${source} (group "${definition.name}")`
  return checkedOptions(definition.options, given, `${at}: options`, `${at}: options: the group takes no options`)
}

/** The group's options on each configured chain, by network name: each checked by its `networkOptions` schema, defaults filled. */
function groupNetworkOptions(definition: PluginDefinition, config: BrunoConfig, source: string): ReadonlyMap<string, unknown> {
  const { name, networkOptions: schema } = definition
  return new Map(
    config.networks.map((network, index) => {
      const at = `config networks[${index}].groupOptions.${name} (group "${name}", ${source})`
      const options = checkedOptions(schema, network.groupOptions[name], at, `${at}: the group takes no options on a chain`)
      const checksum = schema && badChecksum(schema, options, `networks[${index}].groupOptions.${name}`)
      if (checksum) throw new ConfigError(checksum)
      return [network.name, options]
    }),
  )
}

/**
 * Options as given, defaults filled and checked by `schema`, a refusal naming `field` and the path
 * within it; a group without a schema takes none (`none` refuses any given).
 */
function checkedOptions(schema: TObject | undefined, given: Record<string, unknown> | undefined, field: string, none: string): unknown {
  if (!schema) {
    if (given && Object.keys(given).length > 0) throw new ConfigError(none)
    return {}
  }
  const options = Value.Default(schema, Value.Clone(given ?? {}))
  const first = Value.Errors(schema, options).First()
  if (first) throw new ConfigError(`${field}${first.path.replaceAll('/', '.')}: ${first.message}`)
  return options
}

/** Where a group's `from` was given, for refusals: the field (`config plugins[0].from`, `--plugin`) and what its paths are relative to. */
interface GivenAt {
  readonly field: string
  readonly base: string
}

/** Imports a group's module (a `plugins` entry's `from`, a `--plugin`) and checks that its default export is a group. */
async function importGroup(from: string, dir: string, at: GivenAt): Promise<PluginDefinition> {
  const entryFile = groupEntryFile(from, dir, at)
  allowBrunoPluginImports()
  let loaded: { default?: unknown }
  try {
    loaded = (await import(pathToFileURL(entryFile).href)) as { default?: unknown }
  } catch (error) {
    throw new ConfigError(`${at.field}: "${from}" cannot be loaded: ${(error as Error).message}`)
  }
  const definition = loaded.default as Partial<PluginDefinition> | undefined
  if (typeof definition?.name !== 'string' || !Number.isInteger(definition.order) || typeof definition.setup !== 'function') {
    throw new ConfigError(`${at.field}: "${from}" does not default-export a group (export default definePlugin({ name, order, setup }))`)
  }
  if (!Value.Check(GroupName, definition.name)) throw new ConfigError(`${at.field}: "${from}" names its group "${definition.name}", which is not a group name (${GroupName.pattern})`)
  return definition as PluginDefinition
}

/**
 * The file a `from` names: a path (relative to the config file) to a module or to a package
 * directory, or a package name looked up in node_modules from the config file's directory up,
 * then from Bruno's.
 */
function groupEntryFile(from: string, dir: string, at: GivenAt): string {
  if (from.startsWith('.') || isAbsolute(from)) {
    const path = resolve(dir, from)
    if (!existsSync(path)) throw new ConfigError(`${at.field}: "${from}" does not exist (paths are relative to ${at.base})`)
    return statSync(path).isDirectory() ? packageEntryFile(path, from, at) : path
  }
  for (const start of [dir, BRUNO_ROOT]) {
    for (let dir = resolve(start); ; dir = dirname(dir)) {
      const candidate = join(dir, 'node_modules', from)
      if (existsSync(join(candidate, 'package.json'))) return packageEntryFile(candidate, from, at)
      if (dirname(dir) === dir) break
    }
  }
  throw new ConfigError(`${at.field}: no package "${from}" is installed beside ${at.base} or beside Bruno`)
}

type Exports = string | { readonly [condition: string]: Exports } | undefined

/** A package directory's main module: its `exports` (".", then "import" or "default"), else `main`, else index.js. */
function packageEntryFile(dir: string, from: string, at: GivenAt): string {
  let manifest: { exports?: Exports; main?: string }
  try {
    manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as typeof manifest
  } catch {
    throw new ConfigError(`${at.field}: "${from}" has no readable package.json`)
  }
  const root = typeof manifest.exports === 'object' && '.' in manifest.exports ? manifest.exports['.'] : manifest.exports
  let target = root
  while (typeof target === 'object') target = target.import ?? target.default
  return join(dir, target ?? manifest.main ?? 'index.js')
}

/**
 * The devnet's config serving the groups `npm start -- --plugin …` names (paths relative to the
 * working directory, or package names): each is imported, its `devnet` hook deploys what it needs
 * on the fresh chain and gives its options there (none: its options' defaults), and it is enabled
 * after the built-in groups.
 *
 * @example
 * config = await withDevnetPlugins(devnetConfig(deployment, env), ['./my-delegate'], deployment, process.cwd())
 */
export async function withDevnetPlugins(config: BrunoConfig, froms: readonly string[], deployment: DevnetDeployment, dir: string): Promise<BrunoConfig> {
  const plugins: PluginEntry[] = [...config.plugins]
  const groups = [...config.groups]
  for (const from of froms) {
    const definition = await importGroup(from, dir, { field: '--plugin', base: 'the working directory' })
    const options = definition.devnet ? await definition.devnet(deployment) : undefined
    if (!definition.devnet && definition.options) {
      const first = Value.Errors(definition.options, Value.Default(definition.options, {})).First()
      if (first) throw new ConfigError(`--plugin "${from}" (group "${definition.name}"): options${first.path.replaceAll('/', '.')}: ${first.message}, and the group has no devnet hook to give its options on the devnet: serve it with --config`)
    }
    plugins.push({ from: from.startsWith('.') || isAbsolute(from) ? resolve(dir, from) : from, ...(options === undefined ? {} : { options: options as Record<string, unknown> }) })
    groups.push(definition.name)
  }
  return { ...config, plugins, groups }
}

/**
 * A config file read and checked as `bruno serve` and `bruno preflight` both check it: the file
 * (`loadConfig`: JSON, keys, presets, schema, checksums, environment), then its groups
 * (`loadGroups`: every `plugins` entry loaded, every enabled group installed), so that neither
 * command passes what the other refuses.
 *
 * @example
 * const { config, groups } = await loadCheckedConfig('/etc/bruno/bruno.json', process.env, builtinGroups)
 */
export async function loadCheckedConfig(
  path: string,
  env: NodeJS.ProcessEnv,
  builtins: readonly PluginDefinition[],
  overrides: ConfigOverrides = {},
): Promise<{ config: BrunoConfig; groups: ServedGroup[] }> {
  const config = await loadConfig(path, env, overrides)
  return { config, groups: await loadGroups(config, builtins, dirname(resolve(path))) }
}

let apiResolvable = false

/** Lets every group's `import … from 'bruno/plugin'` reach this Bruno's API (core/pluginApiHook.ts), once per process. */
function allowBrunoPluginImports(): void {
  if (apiResolvable) return
  // The sources under tsx (.ts), or the built package under plain Node (dist/, .js).
  const ext = import.meta.url.endsWith('.ts') ? 'ts' : 'js'
  register(new URL(`../core/pluginApiHook.${ext}`, import.meta.url), { data: { url: new URL(`../core/plugin.${ext}`, import.meta.url).href } })
  apiResolvable = true
}
