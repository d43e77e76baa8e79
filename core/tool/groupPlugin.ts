import type { FastifyPluginAsync } from 'fastify'
import { ConfigError } from '../../config/load.ts'
import type { Network } from '../chain/networks.ts'
import type { PluginDefinition } from '../plugin.ts'

/** A group this deployment serves: its plugin, its options and its options on each chain (validated, defaults filled), its order. */
export interface ServedGroup {
  readonly definition: PluginDefinition
  readonly options: unknown
  /** Its `networkOptions` by network name, one entry per configured network. */
  readonly networkOptions: ReadonlyMap<string, unknown>
  readonly order: number
  /** Where it came from, for messages: `built in` or the config entry, e.g. `plugins[0]`. */
  readonly source: string
}

/** A served group's preflight check (`PluginDefinition.preflight`), its options bound. */
export interface GroupCheck {
  readonly name: string
  check(network: Network): Promise<string>
}

/**
 * The checks the served groups add to each chain's preflight, in their order.
 *
 * @example
 * await preflight(config, env, groupChecks(await loadGroups(config, builtinGroups, dir)))
 */
export function groupChecks(groups: readonly ServedGroup[]): GroupCheck[] {
  return groups.flatMap((group) => {
    const { preflight } = group.definition
    return preflight ? [{ name: group.definition.name, check: (network: Network) => preflight(network, group.options as never, optionsOn(group)(network)) }] : []
  })
}

/**
 * Wraps a group into a Fastify plugin: it runs the group's `setup` with core's services and adds
 * what it returns to the registry. Not wrapped in fastify-plugin: a group stays encapsulated and
 * only talks to the registry. A group that cannot be served (its setup refuses, a tool name, a
 * prompt or an order clashes) stops the app with a ConfigError naming it.
 *
 * @example
 * await app.register(groupPlugin({ definition: erc20Group, options: {}, networkOptions: new Map(), order: 40, source: 'built in' }))
 */
export function groupPlugin(group: ServedGroup): FastifyPluginAsync {
  const { definition, source } = group
  return async (app) => {
    const { registry, services } = app.bruno
    try {
      const contribution = await definition.setup(services, group.options as never, optionsOn(group))
      registry.addGroup({ ...contribution, name: definition.name, order: group.order })
      if (contribution.delegate) app.bruno.relay.acceptDelegate(contribution.delegate)
    } catch (error) {
      throw new ConfigError(`config groups: group "${definition.name}" (${source}) cannot be served: ${(error as Error).message}`)
    }
  }
}

/** A group's options on a network (`PluginDefinition.setup`'s `optionsOn`); a network the config does not have has none. */
function optionsOn(group: ServedGroup): (network: Network) => never {
  return (network) => {
    if (!group.networkOptions.has(network.name)) throw new Error(`group "${group.definition.name}" has no options on the network "${network.name}"`)
    return group.networkOptions.get(network.name) as never
  }
}
