import type { FastifyPluginAsync } from 'fastify'
import { paymentAuthorizationGroup } from './3009/index.ts'
import { brunoGroup } from './bruno/index.ts'
import { caliburGroup } from './calibur/index.ts'
import { erc20Group } from './erc20/index.ts'
import { uniswapGroup } from './uniswap/index.ts'

/** The groups Bruno ships, by name. A deployment serves those its config enables. */
export const builtinGroups: Readonly<Record<string, FastifyPluginAsync>> = {
  bruno: brunoGroup,
  calibur: caliburGroup,
  '3009': paymentAuthorizationGroup,
  erc20: erc20Group,
  uniswap: uniswapGroup,
}
