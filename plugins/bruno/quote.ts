import { Type, type TSchema } from '@sinclair/typebox'
import { defineTool, Quote, QuoteRequest } from '../../core/plugin.ts'

/**
 * `quote`: what Bruno charges, in a token, to send a call.
 *
 * @example
 * registry.addGroup({ name: 'bruno', …, tools: [quote(app.bruno.chainArgument), …] })
 */
export const quote = (chain: TSchema) =>
  defineTool({
    name: 'quote',
    title: 'Quote the relay fee',
    description:
      'Prices `call` in `token`: the whole runner transaction\'s gas at current max fees plus the margin, at the pool ' +
      'price, rounded up. Pay it with payment_authorization (its `amount`), or quote calibur_execute\'s call with payment ' +
      '"batch". expectedChargeBaseUnits: the charge expected at current fees, the rest refunded.',
    input: Type.Object({ chain, ...QuoteRequest.properties }, { additionalProperties: false }),
    output: Quote,
    annotations: { readOnlyHint: true, openWorldHint: true },
    handler: async ({ chain: name, ...request }, { relay, client }) => relay.quote(name as string, request, client),
  })
