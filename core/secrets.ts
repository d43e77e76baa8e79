import type { BrunoConfig } from '../config/schema.ts'
import { laneSecrets } from './chain/runnerKeys.ts'

/**
 * The secret values a config points to: each network's RPC URL (it usually carries an API key),
 * its runner's private keys (its lanes' too, or their mnemonic) and its broadcast URL if it has one, and the PostgreSQL store's URL
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
    return [...urlSecrets(url), key, ...laneSecrets(network, env), ...urlSecrets(broadcastUrl)].filter((secret): secret is string => Boolean(secret))
  })
  return [...networkSecrets, ...storeSecrets(config, env)]
}

/**
 * An RPC URL and the parts of it a node or a library may quote alone: the URL without its scheme
 * (and without its query), its credentials, each long path segment and each query value (an API
 * key sits in one of them). Its host alone is not a secret.
 *
 * @example
 * urlSecrets('https://user:pa55word@eth.example/v2/AbCdEf0123456789?apikey=QueryKey987')
 * // ['https://user:pa55word@…', 'user:pa55word@eth.example/v2/…?apikey=QueryKey987', 'eth.example/v2/AbCdEf0123456789', 'pa55word', 'AbCdEf0123456789', 'QueryKey987', …]
 */
export function urlSecrets(url: string | undefined): string[] {
  if (!url) return []
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return [url]
  }
  const decoded = (part: string) => {
    try {
      return decodeURIComponent(part)
    } catch {
      return part
    }
  }
  // A path segment or query value is taken for a key when it looks like one: an ordinary word in a
  // path (`/optimism/`) is left alone, since it would be redacted from every answer.
  const keyLike = (part: string) => part.length >= 16 || (part.length >= 8 && /[0-9]/.test(part) && /[a-z]/i.test(part))
  const credentials = [parsed.username, parsed.password].flatMap((part) => [part, decoded(part)])
  const segments = parsed.pathname.split('/').flatMap((segment) => [segment, decoded(segment)]).filter(keyLike)
  const values = [...parsed.searchParams.values()].filter(keyLike)
  const withoutScheme = url.replace(/^[a-z][a-z0-9+.-]*:\/\//i, '')
  const hostAndPath = parsed.pathname.length > 1 ? `${parsed.host}${parsed.pathname}` : undefined
  return [url, withoutScheme, hostAndPath, ...credentials, ...segments, ...values].filter((part): part is string => Boolean(part))
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
