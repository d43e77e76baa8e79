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
      'units), the payee to pay, and validUntil. Set payment: "authorization" when the fee will be paid by a signed ' +
      'EIP-3009 transfer (payment_authorization), so its gas is counted. The call must already work: a call that ' +
      'reverts is refused with the reason. For a Calibur batch, calibur_batch quotes its own payment leg; use this for ' +
      'other calls.',
    input: Type.Object({ chain, ...QuoteRequest.properties }, { additionalProperties: false }),
    output: Quote,
    annotations: { readOnlyHint: true, openWorldHint: true },
    handler: async ({ chain: name, ...request }, { relay }) => relay.quote(name as string, request),
  })
