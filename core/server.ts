import { readFileSync } from 'node:fs'
import type { FastifyInstance } from 'fastify'
import { buildApp, type AppOptions } from './app.ts'
import type { ServerInfo } from './mcp/dispatcher.ts'

// package.json is beside core/ when tsx runs the sources (core/server.ts), beside dist/ when Node runs the
// built package (dist/core/server.js).
const PACKAGE_JSON = new URL(import.meta.url.endsWith('.ts') ? '../package.json' : '../../package.json', import.meta.url)

/** Bruno's name and version as `serverInfo` reports them, from package.json. */
export const serverInfo: ServerInfo = {
  name: 'bruno',
  version: (JSON.parse(readFileSync(PACKAGE_JSON, 'utf8')) as { version: string }).version,
}

export interface RunningServer {
  readonly app: FastifyInstance
  /** The base URL, e.g. `http://127.0.0.1:3030`; the MCP endpoint is `${url}/mcp`. */
  readonly url: string
  close(): Promise<void>
}

/**
 * Builds the app for a config and listens on the configured host and port (0 = any free port).
 *
 * @example
 * const server = await startServer({ config, groups: builtinGroups, logger })
 * console.log(`${server.url}/mcp`)
 */
export async function startServer(options: Omit<AppOptions, 'serverInfo'>): Promise<RunningServer> {
  const app = await buildApp({ ...options, serverInfo })
  const { host, port } = options.config.server
  await app.listen({ host, port })
  const address = app.server.address()
  const bound = typeof address === 'object' && address ? address.port : port
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${bound}`
  return { app, url, close: () => app.close() }
}
