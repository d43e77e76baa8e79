import type { BrunoConfig } from '../config/schema.ts'

/**
 * The secret values a config points to: each network's RPC URL (it usually carries an API key),
 * its runner's private key and its broadcast URL if it has one, and the PostgreSQL store's URL
 * and password. The logger scrubs them from every line.
 *
 * @example
 * const logger = createLogger({ secrets: configuredSecrets(config, process.env) })
 */
export function configuredSecrets(config: BrunoConfig, env: NodeJS.ProcessEnv): string[] {
  const networkSecrets = config.networks.flatMap((network) => {
    const url = env[network.rpcUrl.env]
    // The key's hex digits without "0x": scrubbed, they hide the key written either way.
    const key = env[network.runner.key.env]?.replace(/^0x/i, '')
    // A private builder's endpoint carries its API key like an RPC URL does.
    const broadcastUrl = network.runner.broadcastUrl && env[network.runner.broadcastUrl.env]
    return [url, key, broadcastUrl].filter((secret): secret is string => Boolean(secret))
  })
  return [...networkSecrets, ...storeSecrets(config, env)]
}

/** The store's URL, and its password alone (a driver's message may quote connection parameters). */
function storeSecrets(config: BrunoConfig, env: NodeJS.ProcessEnv): string[] {
  if (config.store.kind !== 'postgres') return []
  const url = env[config.store.url.env]
  if (!url) return []
  let password = ''
  try {
    password = new URL(url).password
  } catch {
    // Not a URL (a libpq key=value string): the whole value is still scrubbed.
  }
  return [url, password, password && decodeURIComponent(password)].filter((secret, index, all) => Boolean(secret) && all.indexOf(secret) === index)
}
