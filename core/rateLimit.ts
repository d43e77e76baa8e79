import rateLimit from '@fastify/rate-limit'
import type { FastifyInstance } from 'fastify'
import type { ServerConfig } from '../config/schema.ts'

/** A client over its limit. Each binding's error handler answers it in its own shape, with 429. */
export class RateLimitedError extends Error {
  override readonly name = 'RateLimitedError'
  readonly statusCode = 429
  readonly code = 'BRUNO_RATE_LIMITED'
}

/** Probes and scrapes are the operator's own, and must keep answering under load. */
const UNLIMITED = new Set(['/healthz', '/readyz', '/metrics'])

/**
 * The per-client (by IP) request limit of `server.rateLimit`, on every route but the probes.
 * `Retry-After` says when to come back.
 *
 * @example
 * await limitRequests(app, config.server)
 */
export async function limitRequests(app: FastifyInstance, server: Pick<ServerConfig, 'rateLimit'>): Promise<void> {
  await app.register(rateLimit, {
    max: server.rateLimit.max,
    timeWindow: server.rateLimit.windowMs,
    allowList: (request) => UNLIMITED.has(request.url),
    // Below the limit, no x-ratelimit-* headers: three more headers on every answer for nothing
    // the caller acts on. Over it, Retry-After and the limit's headers still go out.
    addHeadersOnExceeding: { 'x-ratelimit-limit': false, 'x-ratelimit-remaining': false, 'x-ratelimit-reset': false },
    errorResponseBuilder: (_request, context) => new RateLimitedError(`Too many requests: at most ${context.max} per ${context.after}`),
  })
}
