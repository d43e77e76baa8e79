import { getAddress } from 'viem'
import type { RelayService } from '../relayService.ts'
import type { Quote } from '../relay/schemas.ts'
import { ToolError } from '../tool/tool.ts'
import type { X402Market } from './paidRequest.ts'
import type { PaymentRequirements, PaymentRequirementsV1, X402Request } from './wire.ts'

/** x402's `payment-identifier` extension as Bruno declares it: optional, 16 to 128 letters, digits, `-` or `_`. */
export const PAYMENT_IDENTIFIER_EXTENSION = {
  info: { required: false },
  schema: {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    type: 'object',
    properties: { required: { type: 'boolean' }, id: { type: 'string', minLength: 16, maxLength: 128, pattern: '^[a-zA-Z0-9_-]+$' } },
    required: ['required'],
  },
} as const

/** The first answer's two halves: `PAYMENT-REQUIRED` (v2) and the body (the quotes, and v1's offers where v1 names the chain). */
export interface PaymentRequiredAnswer {
  readonly header: {
    readonly x402Version: 2
    readonly error?: string
    readonly resource: { readonly url: string; readonly description: string; readonly mimeType: string }
    readonly accepts: readonly PaymentRequirements[]
    readonly extensions: { readonly 'payment-identifier': typeof PAYMENT_IDENTIFIER_EXTENSION }
  }
  readonly body: {
    readonly x402Version?: 1
    readonly error?: string
    readonly accepts?: readonly PaymentRequirementsV1[]
    readonly quotes: readonly Quote[]
  }
}

/**
 * What a call costs in each token Bruno is paid in, as x402 asks for it: one "exact" offer per token
 * the relay quotes (signed under the token's EIP-712 domain, `extra`), in v2's header and — where
 * x402 v1 has a name for the chain — in v1's body, beside the quotes themselves. A call the relay
 * refuses gets no offer, and its reason as `error`.
 *
 * @example
 * const { header, body } = await paymentRequired(relay, 'local', { call }, market, { url, maxTimeoutSeconds: 300, client: ip })
 */
export async function paymentRequired(
  relay: Pick<RelayService, 'quote'>,
  chain: string,
  request: X402Request,
  market: X402Market,
  options: { readonly url: string; readonly maxTimeoutSeconds: number; readonly client?: string },
): Promise<PaymentRequiredAnswer> {
  const offers = await Promise.all(
    market.tokens.map((token) =>
      relay.quote(chain, { ...request, token: token.symbol, payment: 'authorization' }, options.client).then(
        async (quote) => ({ quote, domain: await market.domainOf(getAddress(token.address)) }),
        (error: unknown) => {
          if (error instanceof ToolError) return error
          throw error
        },
      ),
    ),
  )
  const priced = offers.filter((offer): offer is { quote: Quote; domain: { name: string; version: string } } => !(offer instanceof ToolError))
  const refusal = priced.length === 0 ? offers.find((offer): offer is ToolError => offer instanceof ToolError) : undefined
  const error = refusal ? { error: refusal.message } : {}
  const description = `the call to ${request.call.to} on ${chain}, run by Bruno`
  const accepts = priced.map(({ quote, domain }) => ({
    scheme: 'exact',
    network: market.caip,
    amount: quote.amountBaseUnits,
    asset: quote.token,
    payTo: quote.payee,
    maxTimeoutSeconds: options.maxTimeoutSeconds,
    extra: { name: domain.name, version: domain.version },
  }))
  const { v1Name } = market
  return {
    header: {
      x402Version: 2,
      ...error,
      resource: { url: options.url, description, mimeType: 'application/json' },
      accepts,
      extensions: { 'payment-identifier': PAYMENT_IDENTIFIER_EXTENSION },
    },
    body: {
      ...(v1Name === undefined
        ? {}
        : {
            x402Version: 1,
            accepts: accepts.map(({ amount, network: _caip, ...offer }) => ({ ...offer, network: v1Name, maxAmountRequired: amount, resource: options.url, description, mimeType: 'application/json' })),
          }),
      ...error,
      quotes: priced.map(({ quote }) => quote),
    },
  }
}
