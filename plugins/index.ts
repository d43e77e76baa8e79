import type { FastifyPluginAsync } from 'fastify'
import { brunoGroup } from './bruno/index.ts'
import { erc20Group } from './erc20/index.ts'
import { uniswapGroup } from './uniswap/index.ts'

/** The groups Bruno ships, by name. A deployment serves those its config enables. */
export const builtinGroups: Readonly<Record<string, FastifyPluginAsync>> = {
  bruno: brunoGroup,
  erc20: erc20Group,
  uniswap: uniswapGroup,
}
