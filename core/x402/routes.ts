import { isDeepStrictEqual } from 'node:util'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import type { FastifyPluginAsync, FastifyReply } from 'fastify'
import { getAddress, type Address } from 'viem'
import { readTokenDomain } from '../chain/tokenDomain.ts'
import { PaymentRefusal } from '../relay/paymentRefusal.ts'
import type { SubmissionView, SubmitRequest } from '../relay/schemas.ts'
import { PaymentIdTaken } from '../store/store.ts'
import { answerRestFailure, requireValid } from '../http/errors.ts'
import { requireChainName } from '../rest/operations.ts'
import { ToolError } from '../tool/tool.ts'
import { X402_ERROR_REASONS } from './errorReason.ts'
import { readPaidRequest, type PaidRequest, type X402Market } from './paidRequest.ts'
import { paymentRequired } from './paymentRequired.ts'
import { x402V1Network } from './v1Networks.ts'
import { encodeHeader, X402Request, type SettleResponse } from './wire.ts'

const requestCheck = TypeCompiler.Compile(X402Request)

/**
 * x402 ("exact" by EIP-3009; version 2, and version 1 where it names the chain) at
 * `POST /<chain>/v1/x402`: one more binding of `quote` and `submit`, for any x402 client,
 * unmodified. The body names the call (`{call, authorizationList?}`).
 * - Without a payment: the call is quoted in each priced token and answered **402**: v2's
 *   `PAYMENT-REQUIRED` header (one offer per token, its EIP-712 name and version in `extra`, the
 *   `payment-identifier` extension declared), and a body of the quotes with, where v1 names the
 *   chain, v1's `x402Version` and `accepts`. A call the relay refuses is 402 with its reason, no offer.
 * - With `PAYMENT-SIGNATURE` (v2) or `X-PAYMENT` (v1): the payload is checked against the offers
 *   (`readPaidRequest`), then run by `submit` itself (the same checks, admission, identity and
 *   runner), and the request is held until the submission settles or `x402.holdSec` passes: **200**
 *   with `PAYMENT-RESPONSE` (v1: `X-PAYMENT-RESPONSE`) `{success: true, transaction, network, payer}`
 *   once done (the body: the submission, its `outcome` saying whether the call succeeded); **402**
 *   with `{success: false, errorReason}` (x402's codes) for a refused or failed payment; **202** with
 *   `settlement_pending` and the hash when the hold ends first (the submission goes on: `status` by
 *   its id). A malformed header is **400**; a payment id already given with another payload, **409**.
 *
 * @example
 * await app.register(x402Binding)
 */
export const x402Binding: FastifyPluginAsync = async (app) => {
  const { networks, relay, config } = app.bruno
  // Payments held now, by client address (x402.maxHeld): each payment's count of held requests.
  const heldBy = new Map<string, Map<string, number>>()
  // A token's EIP-712 domain is fixed at its deployment: read once per token, not per request.
  const domains = new Map<string, Promise<{ name: string; version: string }>>()
  const marketOf = (chain: string): X402Market => {
    const network = networks.get(chain)
    const { chainId } = network.config
    const v1Name = x402V1Network(chainId)
    return {
      chainId,
      caip: `eip155:${chainId}`,
      ...(v1Name === undefined ? {} : { v1Name }),
      payee: getAddress(network.config.payee),
      // The tokens a payment is priced in (a swap path to WETH): those Bruno offers.
      tokens: network.config.tokens.filter((token) => token.swapPath),
      domainOf(token: Address) {
        const key = `${chain}:${token}`
        let known = domains.get(key)
        if (!known) {
          known = readTokenDomain(network.client, token)
          domains.set(key, known)
          // A read that failed (the chain down) is tried again by the next request.
          known.catch(() => domains.delete(key))
        }
        return known
      },
    }
  }
  app.removeContentTypeParser('text/plain')
  app.setErrorHandler(answerRestFailure)
  // x402 lives in headers: a browser client may read them only if exposed.
  app.addHook('onSend', async (_request, reply) => {
    reply.header('access-control-expose-headers', 'PAYMENT-REQUIRED, PAYMENT-RESPONSE, X-PAYMENT-RESPONSE')
  })

  app.post<{ Params: { chain: string } }>('/:chain/v1/x402', async (request, reply) => {
    const chain = requireChainName(networks.names, request.params.chain, 'path')
    requireValid(requestCheck, request.body, 'body')
    const body = request.body as X402Request
    const market = marketOf(chain)
    reply.header('cache-control', 'no-store')

    if (request.headers['payment-signature'] === undefined && request.headers['x-payment'] === undefined) {
      const url = `${request.protocol}://${request.host}${request.url}`
      const required = await paymentRequired(relay, chain, body, market, { url, maxTimeoutSeconds: config.x402.maxTimeoutSec, client: request.ip })
      return reply.code(402).header('payment-required', encodeHeader(required.header)).send(required.body)
    }

    const paid = await readPaidRequest(request.headers, market)
    const responseHeader = paid.version === 2 ? 'payment-response' : 'x-payment-response'
    const network = paid.version === 2 ? market.caip : (market.v1Name ?? market.caip)
    const failed = (status: number, errorReason: string, errorMessage: string) => {
      const settled: SettleResponse = { success: false, errorReason, errorMessage, transaction: '', network }
      return reply.code(status).header(responseHeader, encodeHeader(settled)).send({ error: { code: errorReason, message: errorMessage } })
    }
    if (!('token' in paid)) return failed(paid.status, paid.errorReason, paid.message)
    const submitted: SubmitRequest = { ...body, payment: { token: getAddress(paid.token.address), authorization: paid.authorization, signature: paid.signature } }
    const payer = getAddress(paid.authorization.from)
    const answer = (view: SubmissionView) => answerSettled(reply, view, { header: responseHeader, network, payer })

    // x402's payment-identifier, looked up before the payment is checked (once settled, it no
    // longer would be): the same payload is answered by its submission, another is a conflict.
    if (paid.paymentId !== undefined) {
      const known = await relay.byPaymentId(chain, paid.paymentId)
      if (known && !samePayment(known.request, submitted)) return conflict(reply, paid)
      if (known) return answer(await relay.settled(known.view, config.x402.holdSec * 1000))
    }

    // Held requests are open connections: bounded per client, counted by payment, before one is taken.
    const key = `${submitted.payment.token}:${payer}:${paid.authorization.nonce}`.toLowerCase()
    const held = heldBy.get(request.ip) ?? new Map<string, number>()
    if (!held.has(key) && held.size >= config.x402.maxHeld) {
      return reply
        .code(429)
        .header('retry-after', 1)
        .send({ error: { code: 'rate_limited', message: `${held.size} payments of this client are already held (x402.maxHeld ${config.x402.maxHeld}): send this one again when one is answered; nothing was taken` } })
    }
    held.set(key, (held.get(key) ?? 0) + 1)
    heldBy.set(request.ip, held)
    try {
      let accepted: SubmissionView
      try {
        accepted = await relay.submit(chain, submitted, request.ip, paid.paymentId)
      } catch (error) {
        if (error instanceof PaymentRefusal) return failed(402, X402_ERROR_REASONS[error.problem], error.message)
        if (error instanceof PaymentIdTaken) return conflict(reply, paid)
        if (error instanceof ToolError) return failed(402, 'invalid_payload', error.message)
        throw error
      }
      return answer(await relay.settled(accepted, config.x402.holdSec * 1000))
    } finally {
      const left = (held.get(key) ?? 1) - 1
      if (left > 0) held.set(key, left)
      else held.delete(key)
      if (held.size === 0) heldBy.delete(request.ip)
    }
  })
}

/** Whether a stored submission was accepted for this very payload: the call, the authorizations and the signed payment. */
function samePayment(stored: SubmitRequest, submitted: SubmitRequest): boolean {
  const shape = (request: SubmitRequest) => ({ call: request.call, authorizationList: request.authorizationList, payment: request.payment })
  return isDeepStrictEqual(JSON.parse(JSON.stringify(shape(stored))), JSON.parse(JSON.stringify(shape(submitted))))
}

/** x402's answer to a payment id given again with another payload: 409, nothing run. */
function conflict(reply: FastifyReply, paid: PaidRequest) {
  return reply.code(409).send({
    error: { code: 'conflict', message: `the payment id ${paid.paymentId} was given with another payment: send that payment again as it was, or give this one a new id; nothing was taken` },
  })
}

/** A held request's answer: 200 once paid (whatever the call did), 402 when the payment never settled, 202 while it is still pending. */
function answerSettled(reply: FastifyReply, view: SubmissionView, { header, network, payer }: { header: string; network: string; payer: string }) {
  const transaction = view.transaction?.hash ?? ''
  if (view.stage === 'done') {
    const settled: SettleResponse = { success: true, transaction, network, payer }
    return reply.code(200).header(header, encodeHeader(settled)).send(view)
  }
  const pending = view.stage !== 'failed'
  const settled: SettleResponse = {
    success: false,
    errorReason: pending ? 'settlement_pending' : 'unexpected_settle_error',
    errorMessage: pending ? `not settled yet (${view.stage}); ask status with id ${view.id}` : (view.reason ?? 'the payment did not settle'),
    transaction,
    network,
    payer,
  }
  return reply.code(pending ? 202 : 402).header(header, encodeHeader(settled)).send(view)
}
