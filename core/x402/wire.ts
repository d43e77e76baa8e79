import { Type, type Static } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { AuthorizationList, PaymentSignature, RelayCall, TransferAuthorizationMessage } from '../relay/schemas.ts'
import { Address } from '../tool/schemas.ts'

/** What `POST /<chain>/v1/x402` takes in its body, sent byte for byte again with the payment: the call, as `quote` and `submit` take it. */
export const X402Request = Type.Object({ call: RelayCall, authorizationList: Type.Optional(AuthorizationList) }, { additionalProperties: false })
export type X402Request = Static<typeof X402Request>

/** One way to pay (x402 v2 `PaymentRequirements`, scheme "exact" on EVM): the amount in the asset's base units, to `payTo`, signed under the asset's EIP-712 `extra`. */
export const PaymentRequirements = Type.Object({
  scheme: Type.String(),
  network: Type.String(),
  amount: Type.String({ pattern: '^[0-9]{1,78}$' }),
  asset: Address,
  payTo: Address,
  maxTimeoutSeconds: Type.Integer({ minimum: 0 }),
  extra: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
})
export type PaymentRequirements = Static<typeof PaymentRequirements>

/** The client's `PAYMENT-SIGNATURE` (x402 v2 `PaymentPayload`), "exact" on EVM by EIP-3009: the offer it took, and the signed transfer. */
export const PaymentPayload = Type.Object({
  x402Version: Type.Integer(),
  resource: Type.Optional(Type.Unknown()),
  accepted: PaymentRequirements,
  payload: Type.Object({
    // A smart wallet's too (version 2's clients sign with one): what submit takes.
    signature: PaymentSignature,
    authorization: TransferAuthorizationMessage,
  }),
  extensions: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
})
export type PaymentPayload = Static<typeof PaymentPayload>

/** The client's `X-PAYMENT` (x402 v1 `PaymentPayload`): the scheme and the network's v1 name, and the signed transfer; the asset is the one its signature's domain names. */
export const PaymentPayloadV1 = Type.Object({
  x402Version: Type.Integer(),
  scheme: Type.String(),
  network: Type.String(),
  payload: Type.Object({
    signature: Type.String({ pattern: '^0x[0-9a-fA-F]{130}$' }),
    authorization: TransferAuthorizationMessage,
  }),
})
export type PaymentPayloadV1 = Static<typeof PaymentPayloadV1>

/** x402 v1's `PaymentRequirements`: v2's, but `maxAmountRequired` for `amount`, and the resource in each. */
export interface PaymentRequirementsV1 {
  readonly scheme: string
  readonly network: string
  readonly maxAmountRequired: string
  readonly resource: string
  readonly description: string
  readonly mimeType: string
  readonly payTo: string
  readonly maxTimeoutSeconds: number
  readonly asset: string
  readonly extra: { readonly name: string; readonly version: string }
}

const payloadChecks = { 'PAYMENT-SIGNATURE': TypeCompiler.Compile(PaymentPayload), 'X-PAYMENT': TypeCompiler.Compile(PaymentPayloadV1) }

/** x402's settlement answer (`PAYMENT-RESPONSE`): `transaction` is the hash, "" when nothing was sent. */
export interface SettleResponse {
  readonly success: boolean
  readonly errorReason?: string
  readonly errorMessage?: string
  readonly payer?: string
  readonly transaction: string
  readonly network: string
}

/** A header value as x402 carries it: base64 of the JSON. */
export function encodeHeader(value: unknown): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64')
}

/**
 * A payment header read as its payload — `PAYMENT-SIGNATURE` as v2's, `X-PAYMENT` as v1's — or why
 * it cannot be (not base64 of JSON, or not the shape "exact" on EVM signs): the words name the field.
 *
 * @example
 * decodePaymentHeader('PAYMENT-SIGNATURE', request.headers['payment-signature']) // { ok: true, payload } | { ok: false, problem: 'PAYMENT-SIGNATURE/payload/signature: …' }
 */
export function decodePaymentHeader<Name extends keyof typeof payloadChecks>(
  name: Name,
  header: string,
): { ok: true; payload: Name extends 'X-PAYMENT' ? PaymentPayloadV1 : PaymentPayload } | { ok: false; problem: string } {
  let parsed: unknown
  try {
    parsed = JSON.parse(Buffer.from(header, 'base64').toString('utf8'))
  } catch {
    return { ok: false, problem: `the ${name} header is not base64 of JSON` }
  }
  const check = payloadChecks[name]
  if (check.Check(parsed)) return { ok: true, payload: parsed as Name extends 'X-PAYMENT' ? PaymentPayloadV1 : PaymentPayload }
  const first = check.Errors(parsed).First()
  return { ok: false, problem: `${name}${first?.path ?? ''}: ${first?.message ?? 'not an x402 payment payload'}` }
}
