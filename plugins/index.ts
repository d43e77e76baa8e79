import type { FastifyPluginAsync } from 'fastify'
import { erc20Group } from './erc20/index.ts'
import { uniswapGroup } from './uniswap/index.ts'

/** The groups Bruno ships, by name. A deployment serves those its config enables. */
export const builtinGroups: Readonly<Record<string, FastifyPluginAsync>> = {
  erc20: erc20Group,
  uniswap: uniswapGroup,
}
