import { TypeCompiler } from '@sinclair/typebox/compiler'
import type { FastifyPluginAsync, FastifyReply } from 'fastify'
import { getAddress, isAddressEqual } from 'viem'
import { readTokenDomain } from '../chain/tokenDomain.ts'
import { PaymentRefusal } from '../relay/paymentRefusal.ts'
import type { Quote, SubmissionView } from '../relay/schemas.ts'
import { answerRestFailure, requireValid } from '../rest/errors.ts'
import { requireChainName } from '../rest/operations.ts'
import { ToolError } from '../tool.ts'
import { X402_ERROR_REASONS } from './errorReason.ts'
import { decodePaymentSignature, encodeHeader, X402Request, type PaymentRequirements, type SettleResponse } from './wire.ts'

const requestCheck = TypeCompiler.Compile(X402Request)

/**
 * x402 (v2, scheme "exact" by EIP-3009) at `POST /<chain>/v1/x402`: one more binding of `quote` and
 * `submit`, for any x402 client, unmodified. The body names the call (`{call, authorizationList?}`).
 * - Without `PAYMENT-SIGNATURE`: the call is quoted in each priced token and answered **402** with
 *   `PAYMENT-REQUIRED` (base64 JSON: `x402Version: 2`, `accepts` one offer per token, its EIP-712
 *   name and version in `extra`); a call the relay refuses is 402 with its reason and no offer.
 * - With it: the payload is checked against the offers (scheme, network, asset, payTo), then run by
 *   `submit` itself (the same checks, admission, identity and runner), and the request is held until
 *   the submission settles or `x402.holdSec` passes: **200** with `PAYMENT-RESPONSE {success: true,
 *   transaction, network, payer}` once done (the body: the submission, its `outcome` saying whether
 *   the call succeeded); **402** with `{success: false, errorReason}` (x402's codes) for a refused or
 *   failed payment; **202** with `settlement_pending` and the hash when the hold ends first (the
 *   submission goes on: `status` by its id). A malformed header is **400**.
 *
 * @example
 * await app.register(x402Binding)
 */
export const x402Binding: FastifyPluginAsync = async (app) => {
  const { networks, relay, config } = app.bruno
  // Paid requests held now, by client address (x402.maxHeld).
  const heldBy = new Map<string, number>()
  // A token's EIP-712 domain is fixed at its deployment: read once per token, not per request.
  const domains = new Map<string, Promise<{ name: string; version: string }>>()
  const domainOf = (chain: string, token: `0x${string}`) => {
    const key = `${chain}:${token}`
    let known = domains.get(key)
    if (!known) {
      known = readTokenDomain(networks.get(chain).client, token)
      domains.set(key, known)
      // A read that failed (the chain down) is tried again by the next request.
      known.catch(() => domains.delete(key))
    }
    return known
  }
  app.removeContentTypeParser('text/plain')
  app.setErrorHandler(answerRestFailure)
  // x402 lives in headers: a browser client may read them only if exposed.
  app.addHook('onSend', async (_request, reply) => {
    reply.header('access-control-expose-headers', 'PAYMENT-REQUIRED, PAYMENT-RESPONSE')
  })

  app.post<{ Params: { chain: string } }>('/:chain/v1/x402', async (request, reply) => {
    const chain = requireChainName(networks.names, request.params.chain, 'path')
    requireValid(requestCheck, request.body, 'body')
    const body = request.body as X402Request
    const network = networks.get(chain)
    const caip = `eip155:${network.config.chainId}`
    const payee = getAddress(network.config.payee)
    // The tokens a payment is priced in (a swap path to WETH): those Bruno offers.
    const tokens = network.config.tokens.filter((token) => token.swapPath)
    reply.header('cache-control', 'no-store')
    const signature = request.headers['payment-signature']

    if (signature === undefined) {
      const offers = await Promise.all(
        tokens.map((token) =>
          relay.quote(chain, { ...body, token: token.symbol, payment: 'authorization' }, request.ip).then(
            async (quote) => ({ quote, domain: await domainOf(chain, getAddress(token.address)) }),
            (error: unknown) => {
              if (error instanceof ToolError) return error
              throw error
            },
          ),
        ),
      )
      const priced = offers.filter((offer): offer is { quote: Quote; domain: { name: string; version: string } } => !(offer instanceof ToolError))
      const refusal = offers.find((offer): offer is ToolError => offer instanceof ToolError)
      const accepts: PaymentRequirements[] = priced.map(({ quote, domain }) => ({
        scheme: 'exact',
        network: caip,
        amount: quote.amountBaseUnits,
        asset: quote.token,
        payTo: quote.payee,
        maxTimeoutSeconds: config.x402.maxTimeoutSec,
        extra: { name: domain.name, version: domain.version },
      }))
      const resource = { url: `${request.protocol}://${request.host}${request.url}`, description: `the call to ${body.call.to} on ${chain}, run by Bruno`, mimeType: 'application/json' }
      const required = { x402Version: 2, ...(priced.length === 0 && refusal ? { error: refusal.message } : {}), resource, accepts }
      return reply.code(402).header('payment-required', encodeHeader(required)).send(priced.length > 0 ? priced.map(({ quote }) => quote) : { error: { code: 'refused', message: refusal?.message ?? 'no token to pay in' } })
    }

    const failed = (status: number, errorReason: string, errorMessage: string, transaction = '') => {
      const settled: SettleResponse = { success: false, errorReason, errorMessage, transaction, network: caip }
      return reply.code(status).header('payment-response', encodeHeader(settled)).send({ error: { code: errorReason, message: errorMessage } })
    }
    if (typeof signature !== 'string') return failed(400, 'invalid_payload', 'send one PAYMENT-SIGNATURE header')
    const decoded = decodePaymentSignature(signature)
    if (!decoded.ok) return failed(400, 'invalid_payload', decoded.problem)
    const { accepted, payload } = decoded.payload
    if (decoded.payload.x402Version !== 2) return failed(402, 'invalid_x402_version', `x402Version ${decoded.payload.x402Version}: this endpoint speaks x402 version 2`)
    if (accepted.scheme !== 'exact') return failed(402, 'unsupported_scheme', `scheme "${accepted.scheme}": Bruno takes "exact"`)
    if (accepted.network !== caip) return failed(402, 'invalid_network', `network "${accepted.network}": ${chain} is ${caip}`)
    if (!isAddressEqual(accepted.payTo as `0x${string}`, payee)) return failed(402, 'invalid_exact_evm_payload_recipient_mismatch', `payTo ${accepted.payTo} is not the payee ${payee}`)
    const token = tokens.find((candidate) => isAddressEqual(getAddress(candidate.address), accepted.asset as `0x${string}`))
    if (!token) return failed(402, 'invalid_payment_requirements', `asset ${accepted.asset} is not one Bruno offers on ${chain} (${tokens.map((candidate) => candidate.symbol).join(', ')})`)

    // Held requests are open connections: bounded per client before its payment is taken.
    const held = heldBy.get(request.ip) ?? 0
    if (held >= config.x402.maxHeld) {
      return reply
        .code(429)
        .header('retry-after', 1)
        .send({ error: { code: 'rate_limited', message: `${held} paid requests of this client are already held (x402.maxHeld ${config.x402.maxHeld}): send this one again when one is answered; nothing was taken` } })
    }
    heldBy.set(request.ip, held + 1)
    try {
      let submitted: SubmissionView
      try {
        submitted = await relay.submit(chain, { ...body, payment: { token: getAddress(token.address), authorization: payload.authorization, signature: payload.signature } }, request.ip)
      } catch (error) {
        if (error instanceof PaymentRefusal) return failed(402, X402_ERROR_REASONS[error.problem], error.message)
        if (error instanceof ToolError) return failed(402, 'invalid_payload', error.message)
        throw error
      }
      const view = await relay.settled(submitted, config.x402.holdSec * 1000)
      return answerSettled(reply, view, caip, getAddress(payload.authorization.from))
    } finally {
      const left = (heldBy.get(request.ip) ?? 1) - 1
      if (left === 0) heldBy.delete(request.ip)
      else heldBy.set(request.ip, left)
    }
  })
}

/** A held request's answer: 200 once paid (whatever the call did), 402 when the payment never settled, 202 while it is still pending. */
function answerSettled(reply: FastifyReply, view: SubmissionView, network: string, payer: string) {
  const transaction = view.transaction?.hash ?? ''
  if (view.stage === 'done') {
    const settled: SettleResponse = { success: true, transaction, network, payer }
    return reply.code(200).header('payment-response', encodeHeader(settled)).send(view)
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
  return reply.code(pending ? 202 : 402).header('payment-response', encodeHeader(settled)).send(view)
}
