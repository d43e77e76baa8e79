import type { FastifyPluginAsync } from 'fastify'
import { paymentAuthorization } from './paymentAuthorization.ts'

const instructions =
  '3009 — pay with a signed USDC transfer, for an account with tokens but no ETH and no delegate. `quote` the call ' +
  'with payment: "authorization", then `payment_authorization` with the quote\'s amount returns EIP-712 typed data: ' +
  'the paying account\'s own wallet (an EOA key, not a smart wallet) signs it unchanged, and `submit` takes payment ' +
  '{token, authorization, signature}. The transfer goes to Bruno\'s payee in the same transaction as the call.'

/**
 * The `3009` group: `payment_authorization`. Not wrapped in fastify-plugin: a group stays
 * encapsulated and only talks to the registry.
 *
 * @example
 * await app.register(paymentAuthorizationGroup)
 */
export const paymentAuthorizationGroup: FastifyPluginAsync = async (app) => {
  const { registry, chainArgument } = app.bruno
  registry.addGroup({ name: '3009', order: 30, instructions, tools: [paymentAuthorization(chainArgument)] })
}
