import rateLimit from '@fastify/rate-limit'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { ServerConfig } from '../../config/schema.ts'

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
 * `Retry-After` says when to come back. A request counts once here, before its body is read; a
 * route that does more than one operation per request (a JSON-RPC batch) counts the rest with
 * {@link batchLimiter}, against the same client's count.
 *
 * @example
 * await limitRequests(app, config.server)
 */
export async function limitRequests(app: FastifyInstance, server: Pick<ServerConfig, 'rateLimit'>): Promise<void> {
  const { max, windowMs } = server.rateLimit
  await app.register(rateLimit, {
    max,
    timeWindow: windowMs,
    allowList: (request) => UNLIMITED.has(request.url),
    // Below the limit, no x-ratelimit-* headers: three more headers on every answer for nothing
    // the caller acts on. Over it, Retry-After and the limit's headers still go out.
    addHeadersOnExceeding: { 'x-ratelimit-limit': false, 'x-ratelimit-remaining': false, 'x-ratelimit-reset': false },
    errorResponseBuilder: (_request, context) => tooManyRequests(context.max, windowMs),
  })
}

/** What a batch's elements got from the limit. */
export interface BatchAllowance {
  /** One per element, in order: `undefined` when the element is within the limit, else the refusal to answer it with. */
  readonly refusals: readonly (RateLimitedError | undefined)[]
  /** Seconds until the client's window resets, when any element was refused (the `Retry-After` to send). */
  readonly retryAfterSec?: number
}

/**
 * Counts a batch's elements against the client's limit, one hit each, in the store that counted
 * the request: the limit plugin counted the request itself (it was within the limit, or the route
 * would not run), which stands for the first element; each further element is one more hit, in
 * order, so the elements past the limit are the batch's last ones. Call it in a route of `app`
 * (or a child of it), after `limitRequests`.
 *
 * @example
 * const countBatch = batchLimiter(app, config.server)
 * const { refusals } = await countBatch(request, body.length) // [undefined, undefined, RateLimitedError, …]
 */
export function batchLimiter(app: FastifyInstance, server: Pick<ServerConfig, 'rateLimit'>): (request: FastifyRequest, size: number) => Promise<BatchAllowance> {
  // No options: the plugin's own store, key (the client's IP), limit and window.
  const hit = app.createRateLimit()
  return async (request, size) => {
    const refusals: (RateLimitedError | undefined)[] = [undefined]
    let retryAfterSec: number | undefined
    for (let element = 1; element < size; element++) {
      const counted = await hit(request)
      if (counted.isAllowed || !counted.isExceeded) {
        refusals.push(undefined)
      } else {
        refusals.push(tooManyRequests(counted.max, server.rateLimit.windowMs))
        retryAfterSec = counted.ttlInSeconds
      }
    }
    return retryAfterSec === undefined ? { refusals } : { refusals, retryAfterSec }
  }
}

function tooManyRequests(max: number, windowMs: number): RateLimitedError {
  return new RateLimitedError(`Too many requests: at most ${max} per ${describeWindow(windowMs)}`)
}

/**
 * A window in words: `60000` → `1 minute`, `90000` → `90 seconds`.
 *
 * @example
 * describeWindow(3_600_000) // '1 hour'
 */
export function describeWindow(ms: number): string {
  const units: [number, string][] = [
    [3_600_000, 'hour'],
    [60_000, 'minute'],
    [1_000, 'second'],
  ]
  for (const [size, name] of units) {
    if (ms % size === 0) return `${ms / size} ${name}${ms === size ? '' : 's'}`
  }
  return `${ms} ms`
}
