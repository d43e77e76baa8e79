import { readFile } from 'node:fs/promises'
import type { TSchema } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { getAddress } from 'viem'
import { isLoopbackHost } from './loopback.ts'
import { jsonSyntaxError } from './jsonError.ts'
import { PRESET_NAMES, PRESETS, presetEntry, type PresetName } from './presets.ts'
import { AddressString, BrunoConfig, PostgresStoreConfig, ServerConfig, SqliteStoreConfig } from './schema.ts'
import { suggestion } from './suggest.ts'

/** A config that cannot be served. The message names the field, never a value (values may be secrets). */
export class ConfigError extends Error {
  override readonly name = 'ConfigError'
}

/** Settings given beside the file (`--host`, `--port`): checked with the file, as if it held them. */
export interface ConfigOverrides {
  readonly server?: { readonly host?: string; readonly port?: number }
}

/**
 * Reads and checks a config file (JSON). Defaults fill what the file leaves out; `overrides`
 * replace the file's own settings before anything is checked.
 *
 * @example
 * const config = await loadConfig('bruno.config.json', process.env, { server: { port: 4000 } })
 */
export async function loadConfig(path: string, env: NodeJS.ProcessEnv = process.env, overrides: ConfigOverrides = {}): Promise<BrunoConfig> {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch {
    throw new ConfigError(`config file ${path} cannot be read`)
  }
  return parseConfig(parseConfigText(text, path), env, overrides)
}

/**
 * A config file's text as JSON, or a `ConfigError` naming the line and column where it stops
 * being JSON and what was expected there (never quoting the file: it may hold what it should not).
 *
 * @example
 * parseConfigText('{\n  "groups": ["erc20",]\n}', 'bruno.json')
 * // throws ConfigError: config file bruno.json is not valid JSON: line 2, column 22: a trailing comma before "]" (JSON allows none)
 */
export function parseConfigText(text: string, path: string): unknown {
  // A byte order mark is not JSON, but editors write one: it is no mistake worth refusing.
  const body = text.startsWith('\uFEFF') ? text.slice(1) : text
  try {
    return JSON.parse(body)
  } catch {
    const error = jsonSyntaxError(body)
    const where = error ? `line ${error.line}, column ${error.column}: ${error.reason}` : 'it cannot be parsed'
    throw new ConfigError(`config file ${path} is not valid JSON: ${where}`)
  }
}

/**
 * Checks a parsed config, in order: keys the schema does not know (named with the nearest known
 * one), presets expanded, the shape (the TypeBox schema, defaults filled), address checksums
 * (EIP-55), then what a schema cannot say.
 *
 * @example
 * const config = parseConfig(JSON.parse(text), process.env)
 */
export function parseConfig(raw: unknown, env: NodeJS.ProcessEnv = process.env, overrides: ConfigOverrides = {}): BrunoConfig {
  const given = withOverrides(raw, overrides)
  const unknown = unknownKey(BrunoConfig, given, '')
  if (unknown) throw new ConfigError(unknown)
  const config = Value.Default(BrunoConfig, Value.Clone(expandPresets(given)))
  const first = storeError(config) ?? Value.Errors(BrunoConfig, config).First()
  if (first) throw new ConfigError(`config ${fieldName(first.path)}: ${first.message}${presetHint(config, first.path)}`)
  const checksum = badChecksum(BrunoConfig, config, '')
  if (checksum) throw new ConfigError(checksum)
  checkSemantics(config as BrunoConfig, env)
  return config as BrunoConfig
}

/**
 * The `server` section alone, checked as `parseConfig` checks it: for settings known before any
 * config exists (the devnet's, with `--host` and `--port`), so that they are refused before the
 * devnet is deployed.
 *
 * @example
 * parseServerConfig({ host: '0.0.0.0', port: 3030 }) // throws: server.allowedHosts is required off loopback
 */
export function parseServerConfig(raw: unknown): ServerConfig {
  const unknown = unknownKey(ServerConfig, raw, 'server')
  if (unknown) throw new ConfigError(unknown)
  const server = Value.Default(ServerConfig, Value.Clone(raw))
  const first = Value.Errors(ServerConfig, server).First()
  if (first) throw new ConfigError(`config ${first.path ? `server.${fieldName(first.path)}` : 'server'}: ${first.message}`)
  checkServer(server as ServerConfig)
  return server as ServerConfig
}

function withOverrides(raw: unknown, overrides: ConfigOverrides): unknown {
  const server = Object.fromEntries(Object.entries(overrides.server ?? {}).filter(([, value]) => value !== undefined))
  if (Object.keys(server).length === 0 || !isObject(raw)) return raw
  return { ...raw, server: { ...(isObject(raw.server) ? raw.server : {}), ...server } }
}

function checkServer(server: ServerConfig): void {
  if (!isLoopbackHost(server.host) && server.allowedHosts.length === 0) {
    throw new ConfigError('config server.allowedHosts: required when server.host is not a loopback address (name the hosts Bruno is served as, or "*" behind a proxy that checks Host)')
  }
}

function checkSemantics(config: BrunoConfig, env: NodeJS.ProcessEnv): void {
  const { server, store } = config
  if (store.kind === 'postgres' && !env[store.url.env]) throw new ConfigError(`config store.url: environment variable ${store.url.env} is not set`)
  checkServer(server)
  const names = new Set<string>()
  const chainIds = new Set<number>()
  config.networks.forEach((network, index) => {
    const at = `networks[${index}]`
    if (names.has(network.name)) throw new ConfigError(`config ${at}.name: network name "${network.name}" is used twice`)
    if (chainIds.has(network.chainId)) throw new ConfigError(`config ${at}.chainId: chain id ${network.chainId} is used twice`)
    names.add(network.name)
    chainIds.add(network.chainId)
    if (!env[network.rpcUrl.env]) throw new ConfigError(`config ${at}.rpcUrl: environment variable ${network.rpcUrl.env} is not set`)
    const broadcast = network.runner.broadcastUrl
    // Unset, sends would silently fall back to the public RPC: the protection it was configured for would be gone.
    if (broadcast && !env[broadcast.env]) throw new ConfigError(`config ${at}.runner.broadcastUrl: environment variable ${broadcast.env} is not set`)
    const symbols = new Set<string>()
    network.tokens.forEach((token, tokenIndex) => {
      const tokenAt = `${at}.tokens[${tokenIndex}]`
      if (symbols.has(token.symbol.toLowerCase())) throw new ConfigError(`config ${tokenAt}.symbol: symbol "${token.symbol}" is used twice`)
      symbols.add(token.symbol.toLowerCase())
      const last = token.swapPath?.at(-1)
      if (last && getAddress(last.tokenOut) !== getAddress(network.weth)) {
        throw new ConfigError(`config ${tokenAt}.swapPath: the last hop must end at the network's WETH`)
      }
    })
  })
}

/**
 * Each `networks[]` entry that names a `preset`, merged over the preset's entry: what the entry
 * gives wins (objects key by key, arrays and values whole). A preset's addresses are its chain's,
 * so an entry may not move it to another chain id.
 */
function expandPresets(raw: unknown): unknown {
  if (!isObject(raw) || !Array.isArray(raw.networks)) return raw
  const networks = raw.networks.map((entry: unknown, index: number) => {
    if (!isObject(entry) || entry.preset === undefined) return entry
    const at = `config networks[${index}]`
    if (typeof entry.preset !== 'string' || !(PRESET_NAMES as string[]).includes(entry.preset)) {
      const named = typeof entry.preset === 'string' ? `"${entry.preset}"` : 'that'
      throw new ConfigError(`${at}.preset: no preset is named ${named}; ${suggestion(String(entry.preset), PRESET_NAMES, 'presets')}`)
    }
    const preset = PRESETS[entry.preset as PresetName]
    if (entry.chainId !== undefined && entry.chainId !== preset.chainId) {
      throw new ConfigError(
        `${at}.chainId: the preset "${entry.preset}" is ${preset.title}, chain id ${preset.chainId}, and its addresses are that chain's: leave chainId out, or leave the preset out and give every address`,
      )
    }
    return mergePatch(presetEntry(entry.preset as PresetName), entry)
  })
  return { ...raw, networks }
}

/** RFC 7386 style: `patch`'s objects merged into `base`'s key by key, anything else replacing it. */
function mergePatch(base: unknown, patch: unknown): unknown {
  if (!isObject(base) || !isObject(patch)) return patch === undefined ? base : patch
  const merged: Record<string, unknown> = { ...base }
  for (const [key, value] of Object.entries(patch)) merged[key] = mergePatch(base[key], value)
  return merged
}

// The network fields a preset fills: missing from an entry without one, the error says so.
const PRESET_FIELDS = new Set(['name', 'chainId', 'weth', 'tokens', 'uniswap'])

function presetHint(config: unknown, pointer: string): string {
  const match = /^\/networks\/(\d+)\/([^/]+)$/.exec(pointer)
  if (!match || !PRESET_FIELDS.has(match[2]!)) return ''
  const entry = (config as { networks?: unknown[] }).networks?.[Number(match[1])]
  if (!isObject(entry) || entry[match[2]!] !== undefined || entry.preset !== undefined) return ''
  return ` (give it, or "preset": one of ${PRESET_NAMES.join(', ')}, which fills it for that chain)`
}

// Network keys that became a group's option on the chain: the refusal says where each went.
const MOVED_NETWORK_KEYS: Readonly<Record<string, (at: string) => string>> = {
  calibur: (at) =>
    `the delegate's address is now the calibur group's option on the chain, ${at}.groupOptions.calibur.address, and defaults to ` +
    "Calibur's own address (0x000000005c84F8Fd50b21CAC312528A64437030e, the same on every chain): delete the key, or move a different address there",
}

/**
 * The first key an object in `value` has that its schema does not (where the schema allows no
 * others), as the error to throw: its path, and the nearest known key or the known keys.
 */
function unknownKey(schema: TSchema, value: unknown, at: string): string | undefined {
  if (Array.isArray(value)) {
    if (schema.type !== 'array' || !schema.items) return undefined
    for (const [index, item] of value.entries()) {
      const found = unknownKey(schema.items as TSchema, item, `${at}[${index}]`)
      if (found) return found
    }
    return undefined
  }
  if (!isObject(value)) return undefined
  if (Array.isArray(schema.anyOf)) {
    const variants = (schema.anyOf as TSchema[]).filter((variant) => variant.type === 'object' && variant.properties)
    const byKind = variants.find((variant) => variant.properties.kind?.const !== undefined && variant.properties.kind.const === value.kind)
    const knows = (variant: TSchema) => Object.keys(value).filter((key) => key in variant.properties).length
    const chosen = byKind ?? variants.sort((a, b) => knows(b) - knows(a))[0]
    return chosen && unknownKey(chosen, value, at)
  }
  if (schema.type !== 'object' || !schema.properties) return undefined
  const properties = schema.properties as Record<string, TSchema>
  for (const [key, child] of Object.entries(value)) {
    const path = at ? `${at}.${key}` : key
    const known = properties[key]
    if (known) {
      const found = unknownKey(known, child, path)
      if (found) return found
    } else if (schema.additionalProperties === false) {
      const moved = /^networks\[\d+\]$/.test(at) && Object.hasOwn(MOVED_NETWORK_KEYS, key) ? MOVED_NETWORK_KEYS[key] : undefined
      if (moved) return `config ${path}: ${moved(at)}`
      return `config ${path}: unknown key; ${suggestion(key, Object.keys(properties), 'the keys here are')}`
    }
  }
  return undefined
}

/**
 * The first address in `value` whose mixed case is not its EIP-55 checksum, as the error to
 * throw. An address in one case only carries no checksum and is taken as written.
 */
export function badChecksum(schema: TSchema, value: unknown, at: string): string | undefined {
  if (typeof value === 'string') {
    if (schema.pattern !== AddressString.pattern || !/^0x[0-9a-fA-F]{40}$/.test(value)) return undefined
    const hex = value.slice(2)
    if (hex === hex.toLowerCase() || hex === hex.toUpperCase() || getAddress(value) === value) return undefined
    return (
      `config ${at}: ${value} is not a valid EIP-55 checksum (its mix of upper and lower case does not match the address): ` +
      'a character is likely mistyped. Copy the address again from its source (a checksummed address, or all lowercase to skip the check)'
    )
  }
  if (Array.isArray(value)) {
    if (schema.type !== 'array' || !schema.items) return undefined
    for (const [index, item] of value.entries()) {
      const found = badChecksum(schema.items as TSchema, item, `${at}[${index}]`)
      if (found) return found
    }
    return undefined
  }
  if (!isObject(value)) return undefined
  const variants: TSchema[] = Array.isArray(schema.anyOf) ? schema.anyOf : [schema]
  for (const variant of variants) {
    if (variant.type !== 'object' || !variant.properties) continue
    for (const [key, child] of Object.entries(variant.properties as Record<string, TSchema>)) {
      const found = badChecksum(child, value[key], at ? `${at}.${key}` : key)
      if (found) return found
    }
  }
  return undefined
}

/**
 * A store that matches neither kind would only be "Expected union value": checked against the
 * kind it names instead, the error says which field is wrong.
 */
function storeError(config: unknown): { path: string; message: string } | undefined {
  const store = (config as { store?: { kind?: unknown } } | null | undefined)?.store
  if (typeof store !== 'object' || store === null) return undefined
  if (store.kind !== 'sqlite' && store.kind !== 'postgres') return { path: '/store/kind', message: "Expected 'sqlite' or 'postgres'" }
  const error = Value.Errors(store.kind === 'postgres' ? PostgresStoreConfig : SqliteStoreConfig, store).First()
  return error && { path: `/store${error.path}`, message: error.message }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** `/networks/0/rpcUrl/env` → `networks[0].rpcUrl.env` */
function fieldName(pointer: string): string {
  if (pointer === '') return '(root)'
  return pointer
    .slice(1)
    .split('/')
    .map((part, index) => (/^\d+$/.test(part) ? `[${part}]` : index === 0 ? part : `.${part}`))
    .join('')
}
