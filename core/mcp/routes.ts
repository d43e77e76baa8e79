import type { FastifyError, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { UnsafeJsonError } from '../http/boundedJson.ts'
import { reportFault } from '../chain/faults.ts'
import { RateLimitedError } from '../http/rateLimit.ts'
import { McpDispatcher } from './dispatcher.ts'
import { CachedResultAnswer, ErrorCode, errorPayload } from '../http/jsonrpc.ts'
import type { RegistryView } from '../registry.ts'
import { onlyPost } from '../http/unrouted.ts'

/**
 * Registered under the prefix `/mcp`: `POST /mcp` (every enabled group) and `POST /mcp/<group,group,…>` (those groups only).
 * JSON responses only; every other method is 405 (no streams, no sessions); an unknown group is a
 * 404 with no MCP body.
 */
export const mcpRoutes: FastifyPluginAsync = async (app) => {
  const { registry, services: context, serverInfo } = app.bruno
  const dispatcher = new McpDispatcher(serverInfo)

  const answer = async (view: RegistryView | undefined, request: FastifyRequest, reply: FastifyReply) => {
    if (!view) return reply.code(404).send()
    // Who asked, for the relay's per-client admission, and by which origin (a view links back to it): one small object per request.
    const { status, payload, counted } = await dispatcher.dispatch(view, request.body, request.headers, { ...context, client: request.ip, origin: `${request.protocol}://${request.host}` }, request.log)
    app.bruno.metrics.countMcp(counted)
    reply.code(status)
    if (payload instanceof CachedResultAnswer) return sendCached(reply, payload)
    return payload === undefined ? reply.send() : reply.type('application/json; charset=utf-8').send(payload)
  }

  // MCP bodies are JSON; Fastify's default text/plain parser would let a plain-text body through.
  app.removeContentTypeParser('text/plain')

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const status = error.statusCode ?? 500
    // A fault of Bruno's before the dispatcher: logged once, its correlation id in the answer.
    const fault = status >= 500 ? reportFault(request.log, error, { side: 'bruno', message: 'Internal error' }, { route: 'mcp' }) : undefined
    const [code, message] =
      error instanceof UnsafeJsonError || error instanceof RateLimitedError
        ? [ErrorCode.InvalidRequest, error.message]
        : status === 413
        ? [ErrorCode.InvalidRequest, 'Request body too large']
        : status === 415
          ? [ErrorCode.InvalidRequest, 'Content-Type must be application/json']
          : status < 500
            ? [ErrorCode.ParseError, 'Parse error: the body is not valid JSON']
            : [ErrorCode.InternalError, fault!.message]
    const payload = errorPayload(undefined, { code, message, ...(fault ? { data: { code: 'internal', correlationId: fault.correlationId } } : {}) })
    // Refused before the body was read (too large, not JSON): counted as an error.
    app.bruno.metrics.countMcp({ method: '(error)', tool: '', error: String(code) })
    return reply.code(status).type('application/json').send(payload)
  })

  app.post('', (request, reply) => answer(registry.viewOfPath(), request, reply))
  app.post<{ Params: { groups: string } }>('/:groups', (request, reply) => answer(registry.viewOfPath(request.params.groups), request, reply))
  const notAllowed = errorPayload(undefined, { code: ErrorCode.InvalidRequest, message: 'Method Not Allowed: an MCP endpoint takes POST only' })
  for (const url of ['', '/:groups']) onlyPost(app, url, notAllowed)
  // Any other path under /mcp names no MCP server, as an unknown group does; a body it was sent
  // that cannot be read is refused by the error handler above, in JSON-RPC.
  app.setNotFoundHandler((_request, reply) => reply.code(404).send())
}

/**
 * A cached result's answer written as its two parts, the shared head and the id, in one corked
 * write: Fastify's `send` takes one payload, which would mean a copy of the head per answer. The
 * access log and metrics still see the answer (Fastify's response listeners are set before the
 * handler runs); the headers the reply carries so far go with it.
 */
function sendCached(reply: FastifyReply, answer: CachedResultAnswer): void {
  reply.hijack()
  const response = reply.raw
  for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) response.setHeader(name, value)
  response.writeHead(reply.statusCode, { 'content-type': 'application/json; charset=utf-8', 'content-length': answer.byteLength })
  response.cork()
  response.write(answer.head)
  response.end(answer.tail)
}
