import type { TSchema } from '@sinclair/typebox'
import type { TypeCheck } from '@sinclair/typebox/compiler'
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify'
import { UnsafeJsonError } from './boundedJson.ts'
import { blameOf, reportFault } from '../chain/faults.ts'
import { RateLimitedError } from './rateLimit.ts'
import { schemaProblems, type SchemaProblem } from '../tool/schemaErrors.ts'
import { ErrorCode } from './jsonrpc.ts'

/**
 * How the REST and JSON-RPC bindings fail, in one table: each kind has its HTTP status and REST
 * `error.code` (REST) and its JSON-RPC error code (`POST /rpc`). Application codes sit outside
 * JSON-RPC's reserved -32768..-32000 range. The caller's refusals are 4xx; a fault of the chain
 * (503) or of Bruno (500) is JSON-RPC's internal error, -32603, with a correlation id.
 */
export const Failures = {
  invalid_request: { status: 400, rpcCode: ErrorCode.InvalidParams },
  unknown_chain: { status: 404, rpcCode: ErrorCode.InvalidParams },
  not_found: { status: 404, rpcCode: 1002 },
  refused: { status: 422, rpcCode: 1001 },
  chain_unavailable: { status: 503, rpcCode: ErrorCode.InternalError },
  internal: { status: 500, rpcCode: ErrorCode.InternalError },
  // Refused by the HTTP layer before any binding reads the request.
  parse_error: { status: 400, rpcCode: ErrorCode.ParseError },
  payload_too_large: { status: 413, rpcCode: ErrorCode.InvalidRequest },
  unsupported_media_type: { status: 415, rpcCode: ErrorCode.InvalidRequest },
  rate_limited: { status: 429, rpcCode: ErrorCode.InvalidRequest },
  // Answered for the HTTP layer itself, outside the routes (core/http/unrouted.ts): a path or method
  // no route serves, a URL the router cannot read, a request Node's HTTP parser refused.
  no_route: { status: 404, rpcCode: ErrorCode.InvalidRequest },
  forbidden: { status: 403, rpcCode: ErrorCode.InvalidRequest },
  method_not_allowed: { status: 405, rpcCode: ErrorCode.InvalidRequest },
  request_timeout: { status: 408, rpcCode: ErrorCode.InvalidRequest },
  uri_too_long: { status: 414, rpcCode: ErrorCode.InvalidRequest },
  headers_too_large: { status: 431, rpcCode: ErrorCode.InvalidRequest },
} as const

export type FailureKind = keyof typeof Failures

/** A failure the bindings answer with: its kind (REST `error.code`), status, JSON-RPC code, message. */
export interface Failure {
  readonly kind: FailureKind
  readonly status: number
  readonly rpcCode: number
  readonly message: string
  /** A fault's (`chain_unavailable`, `internal`): the id of its one log line, also in the message. */
  readonly correlationId?: string
}

/** A request the bindings refuse before (or instead of) calling an operation. */
export class BindingError extends Error {
  override readonly name = 'BindingError'
  constructor(
    readonly kind: FailureKind,
    message: string,
  ) {
    super(message)
  }
}

/**
 * The one mapping of what an operation (or a binding's own check) threw to what the caller gets.
 * A binding's own refusals (`BindingError`) and the HTTP layer's (too large, wrong Content-Type,
 * not JSON, rate limited) keep their kind; everything else is sorted by `blameOf`, as MCP sorts
 * it: the caller's refusal (a `ToolError`, a revert) is `refused` (422, the `isError` text); the
 * chain's fault is `chain_unavailable` (503, naming the chain, never its URL); Bruno's own is
 * `internal` (500). With `log`, writes the failure's one log line: a fault's carries the
 * correlation id that the message and `correlationId` give the caller.
 *
 * @example
 * failureOf(new ToolError('refused: …')) // { kind: 'refused', status: 422, rpcCode: 1001, message: 'refused: …' }
 */
export function failureOf(error: unknown, log?: FastifyBaseLogger): Failure {
  const blame = blameOf(error)
  const refusal = bindingFailure(error) ?? (blame.side === 'caller' ? failureOfKind('refused', blame.message) : undefined)
  if (refusal) {
    log?.info({ kind: refusal.kind, reason: refusal.message }, 'relay request refused')
    return refusal
  }
  const kind = blame.side === 'chain' ? 'chain_unavailable' : 'internal'
  if (!log) return failureOfKind(kind, blame.message)
  const fault = reportFault(log, error, blame)
  return { ...failureOfKind(kind, fault.message), correlationId: fault.correlationId }

  function bindingFailure(error: unknown): Failure | undefined {
    if (error instanceof BindingError) return failureOfKind(error.kind, error.message)
    const status = (error as { statusCode?: unknown } | undefined)?.statusCode
    if (status === 413) return failureOfKind('payload_too_large', 'the body is larger than the configured limit')
    if (status === 415) return failureOfKind('unsupported_media_type', 'Content-Type must be application/json')
    // Refused before it is parsed, so no envelope was read: JSON-RPC's Invalid Request, as MCP answers it.
    if (error instanceof UnsafeJsonError) return { ...failureOfKind('invalid_request', error.message), rpcCode: ErrorCode.InvalidRequest }
    if (error instanceof RateLimitedError) return failureOfKind('rate_limited', error.message)
    if (typeof status === 'number' && status >= 400 && status < 500) return failureOfKind('parse_error', 'the body is empty or not valid JSON')
    return undefined
  }
}

/** A failure of `kind`, with its status and JSON-RPC code. */
export function failureOfKind(kind: FailureKind, message: string): Failure {
  return { kind, ...Failures[kind], message }
}

/**
 * The REST binding's failure body, `{"error": {code, message, correlationId?}}`: every REST-shaped
 * answer is written by it.
 *
 * @example
 * restErrorBody(failureOfKind('no_route', 'Not Found: …')) // { error: { code: 'no_route', message: 'Not Found: …' } }
 */
export function restErrorBody(failure: Failure): { error: { code: FailureKind; message: string; correlationId?: string } } {
  const correlation = failure.correlationId === undefined ? {} : { correlationId: failure.correlationId }
  return { error: { code: failure.kind, message: failure.message, ...correlation } }
}

/**
 * `value` checked against a TypeBox schema (the same compiled check every transport uses), or an
 * `invalid_request` naming the first offending field, in the words MCP's `Invalid arguments` gives
 * (`schemaProblems`: for a union, the payment forms, the form that came closest and its field).
 *
 * @example
 * requireValid(submitCheck, body, 'body')
 * // throws BindingError('invalid_request', 'body.payment: looks like a batch payment ({token, amountBaseUnits, batch}) but `amountBaseUnits`: Expected string to match …')
 */
export function requireValid<T extends TSchema>(check: TypeCheck<T>, value: unknown, where: string): void {
  if (check.Check(value)) return
  const [first] = schemaProblems(check, value, 1)
  throw new BindingError('invalid_request', first ? describe(first, where) : `${where}: invalid`)
}

function describe(problem: SchemaProblem, where: string): string {
  const field = `${where}${problem.path.replaceAll('/', '.')}`.replace(/^\./, '') || 'body'
  return `${field}: ${problem.message}`
}

/**
 * A REST-shaped failure answer (`{"error": {code, message, correlationId?}}` with the kind's status):
 * the error handler of REST and of x402, which answers its own failures the same way.
 *
 * @example
 * app.setErrorHandler(answerRestFailure)
 */
export function answerRestFailure(error: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const failure = failureOf(error, request.log)
  return reply.code(failure.status).send(restErrorBody(failure))
}
