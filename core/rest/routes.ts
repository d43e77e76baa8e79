import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { ErrorCode, type RequestId } from '../http/jsonrpc.ts'
import { batchLimiter, type RateLimitedError } from '../http/rateLimit.ts'
import { onlyPost } from '../http/unrouted.ts'
import { answerRestFailure, failureOf, failureOfKind, type Failure } from '../http/errors.ts'
import { boundOperations, type BoundOperations } from './operations.ts'

/**
 * The relay's REST and JSON-RPC bindings: the same operations as the `bruno` MCP tools, the same
 * schemas, the same refusals (mapped once, in `failureOf`). Registered by the app where the
 * `bruno` group is served (only there does a runner send submissions). Encapsulated: its error
 * handlers and content-type parsers stay here.
 *
 * @example
 * await app.register(relayBindings)
 */
export const relayBindings: FastifyPluginAsync = async (app) => {
  const operations = boundOperations(app.bruno)
  await app.register(restRoutes, { operations })
  await app.register(rpcRoutes, { operations })
}

type Options = { operations: BoundOperations }

/**
 * REST, under `/<chain>/v1/`. Success: 200 with the operation's JSON (202 for submit). Failure:
 * `{ "error": { "code": <kind>, "message": … } }` with the kind's status; a fault (5xx) adds
 * `"correlationId"`, the id of its log line.
 */
const restRoutes: FastifyPluginAsync<Options> = async (app, { operations }) => {
  app.removeContentTypeParser('text/plain')
  app.setErrorHandler(answerRestFailure)

  type Chain = { Params: { chain: string } }
  app.get<{ Params: { chain: string; address: string } }>('/:chain/v1/account/:address', (request) =>
    operations.account(request.params.chain, { address: request.params.address }, 'path'),
  )
  app.post<Chain>('/:chain/v1/quote', (request) => operations.quote(request.params.chain, request.body, 'body', request.ip))
  app.post<Chain>('/:chain/v1/submit', async (request, reply) => {
    const accepted = await operations.submit(request.params.chain, request.body, 'body', request.ip)
    return reply.code(202).header('location', `/v1/status/${encodeURIComponent(accepted.id)}`).send(accepted)
  })
  app.get<{ Params: { chain: string; id: string } }>('/:chain/v1/status/:id', (request) =>
    operations.status({ id: request.params.id }, 'path', request.params.chain),
  )
  app.get<{ Params: { id: string } }>('/v1/status/:id', (request) => operations.status({ id: request.params.id }, 'path'))
}

/** The most requests one JSON-RPC batch may hold (SPEC §7). */
export const MAX_BATCH = 32

type RpcMethod = (params: Record<string, unknown>, client: string) => Promise<unknown>

/**
 * JSON-RPC 2.0 at `POST /rpc`: by-name params, batches (up to 32), notifications (run, not
 * answered). Every answer to a readable request is HTTP 200, errors included; a body that is not
 * JSON is 400 (-32700), nested too deep or with `__proto__` 400 (-32600, as /mcp), too large 413,
 * another Content-Type 415, another method 405; only notifications: 202, no body.
 * Each element of a batch counts against the client's rate limit, as a request does: the elements
 * past the limit are not run, each is answered with the limit's error (-32600), and the reply
 * carries `Retry-After`.
 */
const rpcRoutes: FastifyPluginAsync<Options> = async (app, { operations }) => {
  const methods: Readonly<Record<string, RpcMethod>> = {
    bruno_getAccount: ({ chain, ...request }) => operations.account(chain, request, 'params'),
    bruno_quote: ({ chain, ...request }, client) => operations.quote(chain, request, 'params', client),
    bruno_sendTransaction: ({ chain, ...request }, client) => operations.submit(chain, request, 'params', client),
    bruno_getStatus: (params) => operations.status(params, 'params'),
  }

  app.removeContentTypeParser('text/plain')
  app.setErrorHandler((error, request, reply) => {
    const failure = failureOf(error, request.log)
    return reply.code(failure.status).send(rpcError(null, failure))
  })
  const countBatch = batchLimiter(app, app.bruno.config.server)

  /** One request's answer (`undefined` for a notification); `limited` when it is a batch element past the rate limit. */
  const answer = async (message: unknown, request: FastifyRequest, limited?: RateLimitedError): Promise<object | undefined> => {
    if (!isObject(message) || message.jsonrpc !== '2.0' || typeof message.method !== 'string' || !validId(message.id)) {
      const id = isObject(message) && validId(message.id) ? ((message.id ?? null) as RequestId | null) : null
      return rpcError(id, ErrorCode.InvalidRequest, 'Invalid Request: expected {"jsonrpc":"2.0","method":…,"params":{…},"id":…}')
    }
    const notification = !('id' in message)
    const id = (message.id ?? null) as RequestId | null
    const method = Object.hasOwn(methods, message.method) ? methods[message.method] : undefined
    let reply: object
    if (limited) {
      reply = rpcError(id, failureOf(limited))
    } else if (!method) reply = rpcError(id, ErrorCode.MethodNotFound, `Method not found: ${message.method}`)
    else if (message.params !== undefined && !isObject(message.params)) {
      reply = rpcError(id, ErrorCode.InvalidParams, 'params: Expected an object (params are passed by name)')
    } else {
      try {
        reply = { jsonrpc: '2.0', id, result: await method((message.params ?? {}) as Record<string, unknown>, request.ip) }
      } catch (error) {
        reply = rpcError(id, failureOf(error, request.log))
      }
    }
    return notification ? undefined : reply
  }

  onlyPost(app, '/rpc', JSON.stringify(rpcError(null, failureOfKind('method_not_allowed', 'Method Not Allowed: /rpc takes POST only'))))
  app.post('/rpc', async (request: FastifyRequest, reply: FastifyReply) => {
    const { body } = request
    if (Array.isArray(body)) {
      if (body.length === 0 || body.length > MAX_BATCH) {
        return reply.send(rpcError(null, ErrorCode.InvalidRequest, `Invalid Request: a batch holds 1 to ${MAX_BATCH} requests`))
      }
      // The limit counted the request once; each further element counts too, before any runs.
      const { refusals, retryAfterSec } = await countBatch(request, body.length)
      if (retryAfterSec !== undefined) {
        request.log.info({ elements: body.length, refused: refusals.filter(Boolean).length }, 'batch elements over the rate limit')
        reply.header('retry-after', retryAfterSec)
      }
      const answers = (await Promise.all(body.map((message, index) => answer(message, request, refusals[index])))).filter((found) => found !== undefined)
      return answers.length === 0 ? reply.code(202).send() : reply.send(answers)
    }
    const answered = await answer(body, request)
    return answered === undefined ? reply.code(202).send() : reply.send(answered)
  })
}

/** A JSON-RPC error: a failure's code and message, `data` its REST kind (and a fault's correlation id). */
function rpcError(id: RequestId | null, failure: Failure): object
function rpcError(id: RequestId | null, code: number, message: string): object
function rpcError(id: RequestId | null, failure: Failure | number, message?: string): object {
  if (typeof failure === 'number') return { jsonrpc: '2.0', id, error: { code: failure, message } }
  const data = failure.correlationId === undefined ? { code: failure.kind } : { code: failure.kind, correlationId: failure.correlationId }
  return { jsonrpc: '2.0', id, error: { code: failure.rpcCode, message: failure.message, data } }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function validId(id: unknown): boolean {
  return id === undefined || id === null || typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id))
}
