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
      'Prices sending `call` through Bruno\'s runner: measures the gas of the whole runner transaction against the ' +
      'chain (with the authorizationList, if any), prices it at current fees plus the configured margin, and converts ' +
      'it to `token` at the configured Uniswap pool\'s price, rounded up. Returns the amount (base units and whole ' +
      'units), the payee to pay, and validUntil. payment "authorization" (default): paid by a signed EIP-3009 transfer ' +
      '(payment_authorization), its gas counted; "batch": `call` is a signed Calibur batch (calibur_batch prices its own ' +
      'leg). The call runs from Bruno\'s Runner contract and must already work: one that fails in simulation is refused ' +
      'with the reason (on chain it would still pay).',
    input: Type.Object({ chain, ...QuoteRequest.properties }, { additionalProperties: false }),
    output: Quote,
    annotations: { readOnlyHint: true, openWorldHint: true },
    handler: async ({ chain: name, ...request }, { relay }) => relay.quote(name as string, request),
  })
