import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyPluginAsync } from 'fastify'
import fp from 'fastify-plugin'
import { Type, type TSchema } from '@sinclair/typebox'
import type { BrunoConfig } from '../config/schema.ts'
import { Networks } from './chain/networks.ts'
import { openRelay, type RelayService } from './relay/service.ts'
import { mcpRoutes } from './mcp/routes.ts'
import { originGuard } from './originGuard.ts'
import { relayBindings } from './rest/routes.ts'
import { ToolRegistry } from './registry.ts'
import type { ServerInfo } from './mcp/dispatcher.ts'

/** What core offers every plugin: the config, the networks, the registry, the `chain` argument. */
export interface BrunoCore {
  readonly config: BrunoConfig
  readonly networks: Networks
  readonly relay: RelayService
  readonly registry: ToolRegistry
  readonly serverInfo: ServerInfo
  /** The `chain` argument schema: an enum of the configured networks' names. */
  readonly chainArgument: TSchema
}

declare module 'fastify' {
  interface FastifyInstance {
    bruno: BrunoCore
  }
}

export interface AppOptions {
  readonly config: BrunoConfig
  /** The group plugins by name; only the config's enabled groups are registered. */
  readonly groups: Readonly<Record<string, FastifyPluginAsync>>
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
  const app = Fastify({
    loggerInstance: options.logger,
    bodyLimit: config.server.bodyLimit,
    disableRequestLogging: false,
    requestIdHeader: 'x-request-id',
    genReqId: () => crypto.randomUUID(),
  })

  await app.register(fp(core, { name: 'bruno-core' }), options)
  const guard = originGuard(config.server)
  app.addHook('onRequest', async (request, reply) => {
    if (!guard.allows(request.headers.host, request.headers.origin)) {
      return reply
        .code(403)
        .type('application/json')
        .send('{"jsonrpc":"2.0","error":{"code":-32600,"message":"Forbidden: Host or Origin not allowed"}}')
    }
  })
  for (const name of config.groups) {
    const group = options.groups[name]
    if (!group) throw new Error(`groups: no plugin provides group "${name}"`)
    await app.register(group)
  }
  await app.register(mcpRoutes)
  // REST and JSON-RPC bindings of the relay, served where the relay is (the bruno group).
  if (config.groups.includes('bruno')) await app.register(relayBindings)
  await app.ready()
  // The relay runs where its group is served: only then can a submission arrive.
  if (config.groups.includes('bruno')) app.bruno.relay.startRunners()
  return app
}

const core: FastifyPluginAsync<AppOptions> = async (app, options) => {
  const networks = new Networks(options.config, options.env)
  const relay = openRelay(options.config, networks, options.env ?? process.env, app.log)
  app.addHook('onClose', () => relay.close())
  const names = networks.names.map((name) => Type.Literal(name))
  const chainArgument = Type.Union(names, { description: 'the network to act on, by its configured name' })
  app.decorate('bruno', {
    config: options.config,
    networks,
    relay,
    registry: new ToolRegistry(),
    serverInfo: options.serverInfo,
    chainArgument,
  })
}
