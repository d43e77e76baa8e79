import { randomBytes } from 'node:crypto'
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyPluginAsync } from 'fastify'
import fp from 'fastify-plugin'
import { AccessLog } from './accessLog.ts'
import { parseBoundedJson } from './http/boundedJson.ts'
import { limitRequests } from './http/rateLimit.ts'
import { Type, type TSchema } from '@sinclair/typebox'
import { loadGroups } from '../config/loadGroups.ts'
import type { BrunoConfig } from '../config/schema.ts'
import { Networks } from './chain/networks.ts'
import { groupPlugin } from './tool/groupPlugin.ts'
import { openRelay, type RelayService } from './relayService.ts'
import { mcpRoutes } from './mcp/routes.ts'
import { Metrics } from './metrics.ts'
import { operatorRoutes } from './operators/routes.ts'
import { sharedRead } from './operators/sharedRead.ts'
import { originGuard } from './originGuard.ts'
import type { PluginDefinition } from './plugin.ts'
import { relayBindings } from './rest/routes.ts'
import { answerRestFailure } from './http/errors.ts'
import { x402Binding } from './x402/routes.ts'
import { signPage } from './ui/routes.ts'
import { answerClientError, answerForbidden, answerFrameworkError, answerNoRoute } from './http/unrouted.ts'
import { ToolRegistry } from './registry.ts'
import { createServices, type BrunoServices } from './services.ts'
import type { ServerInfo } from './mcp/dispatcher.ts'
import { secretRedactor } from './redaction.ts'
import { configuredSecrets } from './secrets.ts'

/** Core's state, for core's own routes. Groups see only `services`, through the plugin API (core/plugin.ts). */
export interface BrunoCore {
  readonly config: BrunoConfig
  readonly networks: Networks
  readonly relay: RelayService
  readonly registry: ToolRegistry
  readonly serverInfo: ServerInfo
  /** The app's Prometheus metrics (`GET /metrics`). */
  readonly metrics: Metrics
  /** The `chain` argument schema: an enum of the configured networks' names. */
  readonly chainArgument: TSchema
  /** All that groups and their tools may use of core (core/plugin.ts). */
  readonly services: BrunoServices
}

declare module 'fastify' {
  interface FastifyInstance {
    bruno: BrunoCore
  }
}

export interface AppOptions {
  readonly config: BrunoConfig
  /** The groups Bruno ships (plugins/index.ts); the config's `plugins` install more. Only the enabled ones are served. */
  readonly groups: readonly PluginDefinition[]
  /** The config file's directory: `plugins` paths are relative to it. Default: the working directory. */
  readonly configDir?: string
  readonly logger: FastifyBaseLogger
  readonly serverInfo: ServerInfo
  readonly env?: NodeJS.ProcessEnv
}

/**
 * Builds Bruno's Fastify app: core services, the enabled groups, the MCP routes.
 * The app is ready (every group registered) when the promise resolves.
 *
 * @example
 * const app = await buildApp({ config, groups: builtinGroups, logger, serverInfo })
 * await app.listen({ host: config.server.host, port: config.server.port })
 */
export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const { config } = options
  // Before anything opens: a group that cannot be installed stops the start cleanly.
  const groups = await loadGroups(config, options.groups, options.configDir ?? process.cwd())
  const app = Fastify({
    loggerInstance: options.logger,
    bodyLimit: config.server.bodyLimit,
    logController: new AccessLog(),
    requestIdHeader: 'x-request-id',
    genReqId: requestIds(),
    // Whose X-Forwarded-For names the client (request.ip, the rate limit's key): by default no
    // one's, so behind a reverse proxy every client is the proxy unless it is trusted here.
    trustProxy: trustedProxies(config.server.trustProxy),
    // What no route handler reads is answered in Bruno's shapes too, never quoting the request.
    frameworkErrors: answerFrameworkError,
    clientErrorHandler: answerClientError,
  })
  // The bindings set their own; these answer for the rest (an unrouted path, an operator route).
  app.setNotFoundHandler(answerNoRoute)
  app.setErrorHandler(answerRestFailure)

  // No answer leaves with a secret in it, whatever an upstream error quoted (a node's message that
  // names its RPC URL or key, in any letter case): every text body passes the log lines' scrubber.
  const redact = secretRedactor(configuredSecrets(config, options.env ?? process.env))
  app.addHook('onSend', (_request, _reply, payload, done) => done(null, typeof payload === 'string' ? redact(payload) : payload))

  // Every JSON body, on every route, is bounded (depth, __proto__) before it is parsed.
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    try {
      done(null, parseBoundedJson(body as string))
    } catch (error) {
      done(error as Error, undefined)
    }
  })
  await limitRequests(app, config.server)
  await app.register(fp(core, { name: 'bruno-core' }), options)
  const guard = originGuard(config.server)
  // A callback hook, not an async one: it runs on every request, and has nothing to wait for.
  app.addHook('onRequest', (request, reply, done) => {
    if (guard.allows(request.headers.host, request.headers.origin)) return done()
    answerForbidden(request, reply)
  })
  for (const group of groups) await app.register(groupPlugin(group))
  await app.register(mcpRoutes, { prefix: '/mcp' })
  await app.register(operatorRoutes)
  // REST and JSON-RPC bindings of the relay, and the signing page, served where the relay is (the bruno group).
  if (config.groups.includes('bruno')) {
    await app.register(relayBindings)
    await app.register(x402Binding)
    await app.register(signPage)
  }
  await app.ready()
  // The relay runs where its group is served: only then can a submission arrive.
  if (config.groups.includes('bruno')) app.bruno.relay.startRunners()
  return app
}

/**
 * `server.trustProxy` as Fastify takes it: a number of hops becomes the function Fastify itself
 * makes of one (its types do not admit the number).
 *
 * @example
 * trustedProxies(1) // (address, hop) => hop < 1: only the nearest proxy's X-Forwarded-For entry is believed
 */
function trustedProxies(trust: BrunoConfig['server']['trustProxy']): boolean | string[] | ((address: string, hop: number) => boolean) {
  return typeof trust === 'number' ? (_address, hop) => hop < trust : trust
}

/**
 * Request ids unique across processes and restarts: a random prefix per app, then a count. A UUID
 * per request cost ~2 µs of the ~39 µs CPU an empty request takes (bench/RESULTS.md, the ping row).
 *
 * @example
 * const next = requestIds()
 * next() // '9f2c61d0-1'
 */
function requestIds(): () => string {
  const prefix = randomBytes(4).toString('hex')
  let count = 0
  return () => `${prefix}-${(++count).toString(36)}`
}

const core: FastifyPluginAsync<AppOptions> = async (app, options) => {
  const metrics = new Metrics()
  const networks = new Networks(options.config, options.env, { metrics, log: app.log })
  const relay = openRelay(options.config, networks, options.env ?? process.env, app.log, metrics)
  // Read at scrape time, but at most once per interval however often /metrics is scraped.
  metrics.runnerBalances(sharedRead(() => relay.runnerBalances()))
  metrics.runnerLanes(() => relay.lanes())
  app.addHook('onClose', () => relay.close())
  const names = networks.names.map((name) => Type.Literal(name))
  const chainArgument = Type.Union(names)
  app.decorate('bruno', {
    config: options.config,
    networks,
    relay,
    registry: new ToolRegistry(),
    metrics,
    serverInfo: options.serverInfo,
    chainArgument,
    services: createServices(networks, relay, chainArgument),
  })
}
