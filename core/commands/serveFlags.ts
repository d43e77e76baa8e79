import { createServer } from 'node:net'
import { isIP } from 'node:net'
import { PRESET_NAMES, type PresetName } from '../../config/presets.ts'
import { suggestion } from '../../config/suggest.ts'

/** A flag `bruno serve` (or `bruno preflight`) cannot take: the message names the flag and what it takes. */
export class FlagError extends Error {
  override readonly name = 'FlagError'
}

/** pino's levels, as `--log-level` takes them. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const

export interface ServeFlags {
  readonly host?: string
  readonly port?: number
  readonly logLevel: (typeof LOG_LEVELS)[number]
  readonly as?: PresetName
  /** Groups to serve on the devnet beside the built-in ones (`--plugin`, repeatable). */
  readonly plugins: readonly string[]
  /** The devnet runner's keys (`--lanes`): `runner.key` and this many less one further lanes. */
  readonly lanes?: number
}

/**
 * `bruno serve`'s flags, checked before anything starts (no devnet is deployed for a typo).
 *
 * @example
 * checkServeFlags({ port: '4000', 'log-level': 'debug' }) // { plugins: [], port: 4000, logLevel: 'debug' }
 * checkServeFlags({ port: '70000' })                      // throws FlagError: --port: "70000" is not a port …
 */
export function checkServeFlags(values: { host?: string; port?: string; 'log-level'?: string; as?: string; config?: string; plugin?: string[]; lanes?: string }): ServeFlags {
  let port: number | undefined
  if (values.port !== undefined) {
    port = /^\d{1,5}$/.test(values.port) ? Number(values.port) : Number.NaN
    if (!(port >= 0 && port <= 65_535)) throw new FlagError(`--port: "${values.port}" is not a port: give an integer from 0 to 65535 (0 = any free port)`)
  }
  if (values.host !== undefined && !isHostOrAddress(values.host)) {
    throw new FlagError(`--host: "${values.host}" is not an IP address or host name (e.g. 127.0.0.1, ::1, 0.0.0.0, localhost)`)
  }
  const logLevel = values['log-level'] ?? 'info'
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) throw new FlagError(`--log-level: "${logLevel}" is not a level; ${suggestion(logLevel, LOG_LEVELS, 'the levels are')}`)
  if (values.as !== undefined) {
    if (values.config !== undefined) throw new FlagError('--as gives the devnet a preset\'s identity; with --config, name the preset in the config file ("preset" in a networks entry) instead')
    if (!(PRESET_NAMES as string[]).includes(values.as)) throw new FlagError(`--as: no preset is named "${values.as}"; ${suggestion(values.as, PRESET_NAMES, 'the presets are')}`)
  }
  let lanes: number | undefined
  if (values.lanes !== undefined) {
    if (values.config !== undefined) throw new FlagError('--lanes gives the devnet runner keys; with --config, list them in the config file (runner.lanes) instead')
    lanes = /^\d{1,2}$/.test(values.lanes) ? Number(values.lanes) : Number.NaN
    if (!(lanes >= 1 && lanes <= 64)) throw new FlagError(`--lanes: "${values.lanes}" is not a number of lanes: give an integer from 1 to 64`)
  }
  const plugins = values.plugin ?? []
  if (plugins.length > 0 && values.config !== undefined) {
    throw new FlagError('--plugin serves a group on the devnet; with --config, name it in the config file ("plugins" and "groups") instead')
  }
  return {
    plugins,
    ...(values.host !== undefined ? { host: values.host } : {}),
    ...(port !== undefined ? { port } : {}),
    logLevel: logLevel as ServeFlags['logLevel'],
    ...(values.as !== undefined ? { as: values.as as PresetName } : {}),
    ...(lanes !== undefined ? { lanes } : {}),
  }
}

function isHostOrAddress(host: string): boolean {
  if (isIP(host) !== 0) return true
  return host.length <= 253 && /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/.test(host)
}

/**
 * Binds `host:port` and lets it go at once: whether the server will be able to listen there,
 * found out before anything slow (a devnet's deployment, preflight's RPC reads) rather than after.
 * Port 0 (any free port) always can. Another process may take the port in the moment between
 * this and the server's own bind; the server then fails to start as it would have without this.
 *
 * @example
 * await checkPortFree('127.0.0.1', 3030) // throws FlagError when something listens there
 */
export async function checkPortFree(host: string, port: number): Promise<void> {
  if (port === 0) return
  await new Promise<void>((resolve, reject) => {
    const server = createServer()
    server.once('error', (error: NodeJS.ErrnoException) => reject(new FlagError(bindFailure(host, port, error.code))))
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve()))
  })
}

function bindFailure(host: string, port: number, code: string | undefined): string {
  const at = `${host.includes(':') ? `[${host}]` : host}:${port}`
  if (code === 'EADDRINUSE') return `cannot listen on ${at}: another process is listening there (stop it, or choose another port: --port or server.port)`
  if (code === 'EACCES') return `cannot listen on ${at}: not permitted (ports below 1024 need privileges; choose another with --port or server.port)`
  if (code === 'EADDRNOTAVAIL') return `cannot listen on ${at}: ${host} is not an address of this machine (--host or server.host)`
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `cannot listen on ${at}: the host name ${host} does not resolve (--host or server.host)`
  return `cannot listen on ${at} (${code ?? 'unknown error'})`
}
