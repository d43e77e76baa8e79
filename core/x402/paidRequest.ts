import type { IncomingHttpHeaders } from 'node:http'
import { getAddress, isAddressEqual, recoverTypedDataAddress, type Address, type Hex } from 'viem'
import type { TokenConfig } from '../../config/schema.ts'
import type { TransferAuthorizationMessage } from '../relay/schemas.ts'
import { transferWithAuthorizationTypes } from '../relay/transferWithAuthorizationTypes.ts'
import { decodePaymentHeader } from './wire.ts'

/** Where a payment is offered: the chain as each version names it, the payee, the tokens, and each token's EIP-712 domain. */
export interface X402Market {
  readonly chainId: number
  /** `eip155:<chainId>` */
  readonly caip: string
  /** The chain's x402 v1 name, if v1 has one. */
  readonly v1Name?: string
  readonly payee: Address
  readonly tokens: readonly TokenConfig[]
  domainOf(token: Address): Promise<{ name: string; version: string }>
}

/** A paid retry read: the version it spoke, its network as that version names it, the token it pays in, and the signed transfer. */
export interface PaidRequest {
  readonly version: 1 | 2
  readonly network: string
  readonly token: TokenConfig
  readonly authorization: TransferAuthorizationMessage
  readonly signature: Hex
  /** x402's `payment-identifier` (v2): the client's idempotency key for this payment. */
  readonly paymentId?: string
}

/** Why a paid retry is not one Bruno can run: the HTTP status, x402's error code, and words naming what to fix. */
export interface PaymentHeaderFault {
  readonly version: 1 | 2
  readonly status: 400 | 402
  readonly errorReason: string
  readonly message: string
}

// x402's payment-identifier extension: 16 to 128 of these characters.
const PAYMENT_ID = /^[A-Za-z0-9_-]{16,128}$/

/**
 * The payment a retry carries — `PAYMENT-SIGNATURE` (x402 v2) or `X-PAYMENT` (v1) — checked against
 * what Bruno offers: the version, the scheme ("exact"), the network, and for v2 the offer it took
 * (asset and payTo). A v1 payload names no asset: the token is the offered one whose EIP-712 domain
 * its signature recovers under. Everything else (the signature, value, validity, funds) is `submit`'s.
 *
 * @example
 * const paid = await readPaidRequest(request.headers, market) // { version: 2, token, authorization, … } | { status: 402, errorReason: 'invalid_network', … }
 */
export async function readPaidRequest(headers: IncomingHttpHeaders, market: X402Market): Promise<PaidRequest | PaymentHeaderFault> {
  const v2 = headers['payment-signature']
  const v1 = headers['x-payment']
  const version = v2 === undefined ? 1 : 2
  const fault = (status: 400 | 402, errorReason: string, message: string): PaymentHeaderFault => ({ version, status, errorReason, message })
  if (v2 !== undefined && v1 !== undefined) return fault(400, 'invalid_payload', 'send PAYMENT-SIGNATURE (x402 v2) or X-PAYMENT (v1), not both')
  // Node joins a repeated header with ", ": two payments in one request decode as none (400).
  const header = String(v2 ?? v1)

  if (version === 2) {
    const decoded = decodePaymentHeader('PAYMENT-SIGNATURE', header)
    if (!decoded.ok) return fault(400, 'invalid_payload', decoded.problem)
    const { x402Version, accepted, payload, extensions } = decoded.payload
    if (x402Version !== 2) return fault(402, 'invalid_x402_version', `x402Version ${x402Version} in PAYMENT-SIGNATURE: that header is version 2's (version 1 sends X-PAYMENT)`)
    if (accepted.scheme !== 'exact') return fault(402, 'unsupported_scheme', `scheme "${accepted.scheme}": Bruno takes "exact"`)
    if (accepted.network !== market.caip) return fault(402, 'invalid_network', `network "${accepted.network}": this chain is ${market.caip}`)
    if (!isAddressEqual(accepted.payTo as Address, market.payee)) return fault(402, 'invalid_exact_evm_payload_recipient_mismatch', `payTo ${accepted.payTo} is not the payee ${market.payee}`)
    const token = market.tokens.find((candidate) => isAddressEqual(getAddress(candidate.address), accepted.asset as Address))
    if (!token) return fault(402, 'invalid_payment_requirements', `asset ${accepted.asset} is not one Bruno offers here (${offered(market)})`)
    const identifier = (extensions?.['payment-identifier'] as { info?: { id?: unknown } } | undefined)?.info?.id
    if (identifier !== undefined && (typeof identifier !== 'string' || !PAYMENT_ID.test(identifier))) {
      return fault(400, 'invalid_payload', 'extensions["payment-identifier"].info.id: give 16 to 128 letters, digits, "-" or "_"')
    }
    return { version, network: market.caip, token, authorization: payload.authorization, signature: payload.signature as Hex, ...(identifier === undefined ? {} : { paymentId: identifier }) }
  }

  const decoded = decodePaymentHeader('X-PAYMENT', header)
  if (!decoded.ok) return fault(400, 'invalid_payload', decoded.problem)
  const { x402Version, scheme, network, payload } = decoded.payload
  if (x402Version !== 1) return fault(402, 'invalid_x402_version', `x402Version ${x402Version} in X-PAYMENT: that header is version 1's (version 2 sends PAYMENT-SIGNATURE)`)
  if (scheme !== 'exact') return fault(402, 'unsupported_scheme', `scheme "${scheme}": Bruno takes "exact"`)
  if (market.v1Name === undefined) return fault(402, 'invalid_network', `x402 version 1 has no name for chain id ${market.chainId}: pay with version 2 (network ${market.caip})`)
  if (network !== market.v1Name) return fault(402, 'invalid_network', `network "${network}": this chain is "${market.v1Name}" in x402 version 1`)
  const token = await signedToken(market, payload.authorization, payload.signature as Hex)
  if (!token) return fault(402, 'invalid_exact_evm_payload_signature', `the signature is not ${payload.authorization.from}'s under the EIP-712 domain of any token offered (${offered(market)}): sign the transfer as the 402 offered it`)
  return { version, network, token, authorization: payload.authorization, signature: payload.signature as Hex }
}

/** The offered token whose EIP-3009 domain the transfer was signed under (by its `from`), if any. */
async function signedToken(market: X402Market, authorization: TransferAuthorizationMessage, signature: Hex): Promise<TokenConfig | undefined> {
  for (const token of market.tokens) {
    const address = getAddress(token.address)
    const { name, version } = await market.domainOf(address)
    const signer = await recoverTypedDataAddress({
      domain: { name, version, chainId: BigInt(market.chainId), verifyingContract: address },
      types: transferWithAuthorizationTypes,
      primaryType: 'TransferWithAuthorization',
      message: {
        from: authorization.from as Address,
        to: authorization.to as Address,
        value: BigInt(authorization.value),
        validAfter: BigInt(authorization.validAfter),
        validBefore: BigInt(authorization.validBefore),
        nonce: authorization.nonce as Hex,
      },
      signature,
    }).catch(() => undefined)
    if (signer && isAddressEqual(signer, authorization.from as Address)) return token
  }
  return undefined
}

const offered = (market: X402Market) => market.tokens.map((token) => `${token.symbol} ${getAddress(token.address)}`).join(', ')
