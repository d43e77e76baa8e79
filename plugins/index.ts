import type { PluginDefinition } from '../core/plugin.ts'
import { paymentAuthorizationGroup } from './3009/index.ts'
import { brunoGroup } from './bruno/index.ts'
import { caliburGroup } from './calibur/index.ts'
import { erc20Group } from './erc20/index.ts'
import { uniswapGroup } from './uniswap/index.ts'

/**
 * The groups Bruno ships, each declared with the plugin API as any other group is. A deployment
 * serves those its config's `groups` enables; its `plugins` install more.
 */
export const builtinGroups: readonly PluginDefinition[] = [brunoGroup, caliburGroup, paymentAuthorizationGroup, erc20Group, uniswapGroup]
