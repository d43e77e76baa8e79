import { readFile } from 'node:fs/promises'
import { Value } from '@sinclair/typebox/value'
import { getAddress } from 'viem'
import { isLoopbackHost } from '../core/originGuard.ts'
import { BrunoConfig, PostgresStoreConfig, SqliteStoreConfig } from './schema.ts'

/** A config that cannot be served. The message names the field, never a value (values may be secrets). */
export class ConfigError extends Error {
  override readonly name = 'ConfigError'
}

/**
 * Reads and checks a config file (JSON). Defaults fill what the file leaves out.
 *
 * @example
 * const config = await loadConfig('bruno.config.json', process.env)
 */
export async function loadConfig(path: string, env: NodeJS.ProcessEnv = process.env): Promise<BrunoConfig> {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch {
    throw new ConfigError(`config file ${path} cannot be read`)
  }
  let raw: unknown
  try {
    raw = JSON.parse(text)
  } catch {
    throw new ConfigError(`config file ${path} is not valid JSON`)
  }
  return parseConfig(raw, env)
}

/** Checks a parsed config: its shape (the TypeBox schema), then what a schema cannot say. */
export function parseConfig(raw: unknown, env: NodeJS.ProcessEnv = process.env): BrunoConfig {
  const config = Value.Default(BrunoConfig, Value.Clone(raw))
  const first = storeError(config) ?? Value.Errors(BrunoConfig, config).First()
  if (first) throw new ConfigError(`config ${fieldName(first.path)}: ${first.message}`)
  checkSemantics(config as BrunoConfig, env)
  return config as BrunoConfig
}

function checkSemantics(config: BrunoConfig, env: NodeJS.ProcessEnv): void {
  const { server, store } = config
  if (store.kind === 'postgres' && !env[store.url.env]) throw new ConfigError(`config store.url: environment variable ${store.url.env} is not set`)
  if (!isLoopbackHost(server.host) && server.allowedHosts.length === 0) {
    throw new ConfigError('config server.allowedHosts: required when server.host is not a loopback address (name the hosts Bruno is served as, or "*" behind a proxy that checks Host)')
  }
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

/** `/networks/0/rpcUrl/env` → `networks[0].rpcUrl.env` */
function fieldName(pointer: string): string {
  if (pointer === '') return '(root)'
  return pointer
    .slice(1)
    .split('/')
    .map((part, index) => (/^\d+$/.test(part) ? `[${part}]` : index === 0 ? part : `.${part}`))
    .join('')
}
