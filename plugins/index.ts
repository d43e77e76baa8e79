import type { DevnetDeployment, PluginDefinition } from '../core/plugin.ts'
import { paymentAuthorizationGroup } from './3009/index.ts'
import { brunoGroup } from './bruno/index.ts'
import { caliburGroup } from './calibur/index.ts'
import { erc20Group } from './erc20/index.ts'
import { metaMaskGroup } from './metamask/index.ts'
import { uniswapGroup } from './uniswap/index.ts'

/**
 * The groups Bruno ships, each declared with the plugin API as any other group is. A deployment
 * serves those its config's `groups` enables; its `plugins` install more.
 */
export const builtinGroups: readonly PluginDefinition[] = [brunoGroup, caliburGroup, metaMaskGroup, paymentAuthorizationGroup, erc20Group, uniswapGroup]

/**
 * Runs the built-in groups' devnet hooks on a fresh devnet: what they need beside the chain's own
 * contracts (Calibur's stand-in, MetaMask's delegation framework), so `npm start`'s devnet serves
 * every built-in group. `deployDevnet` runs it last.
 *
 * @example
 * await deployBuiltinGroups(deployment)
 */
export async function deployBuiltinGroups(deployment: DevnetDeployment): Promise<void> {
  for (const group of builtinGroups) await group.devnet?.(deployment)
}
