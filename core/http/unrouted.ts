import { maxHeaderSize, STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { ErrorCode, errorPayload } from './jsonrpc.ts'
import { failureOfKind, restErrorBody, type Failure } from './errors.ts'

/**
 * Bruno's answers to the requests no route handler reads: a path or method nothing serves, a URL
 * the router cannot read, bytes Node's HTTP parser refuses. Each is in the shape of the binding
 * the path belongs to (SPEC §1): the JSON-RPC endpoints' paths (`/mcp`, `/mcp/…`, `/rpc`) a
 * JSON-RPC error as MCP's own transport refusals are; every other path the REST
 * `{"error": {code, message}}`. None quotes
 * the request: a URL may be kilobytes long.
 */

/** Whether `url` is one of the JSON-RPC endpoints' paths: MCP's (`/mcp`, `/mcp/…`) or `/rpc`. */
function isJsonRpcPath(url: string): boolean {
  return /^\/(?:mcp(?:[/?#]|$)|rpc(?:[?#]|$))/.test(url)
}

/** `failure` in the shape of the binding `url` belongs to. */
function answerFailure(url: string, reply: FastifyReply, failure: Failure): FastifyReply {
  reply.code(failure.status).type('application/json; charset=utf-8')
  // The envelope was never read: JSON-RPC's Invalid Request, no id, as MCP's 413 and 415.
  if (isJsonRpcPath(url)) return reply.send(errorPayload(undefined, { code: ErrorCode.InvalidRequest, message: failure.message }))
  return reply.send(restErrorBody(failure))
}

/**
 * The root not-found handler (MCP's paths have their own, core/mcp/routes.ts): 404 `no_route`.
 *
 * @example
 * app.setNotFoundHandler(answerNoRoute)
 */
export function answerNoRoute(_request: FastifyRequest, reply: FastifyReply): FastifyReply {
  return reply.code(404).send(restErrorBody(failureOfKind('no_route', 'Not Found: nothing is served at this path with this method (SPEC.md §1 and §7 list the endpoints)')))
}

/**
 * A request whose `Host` or `Origin` the origin guard refuses (DNS rebinding): 403, in the shape
 * of the binding its path belongs to.
 *
 * @example
 * if (!guard.allows(request.headers.host, request.headers.origin)) answerForbidden(request, reply)
 */
export function answerForbidden(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  return answerFailure(request.url, reply, failureOfKind('forbidden', 'Forbidden: Host or Origin not allowed'))
}

/**
 * Fastify's `frameworkErrors`: the router's refusals before any route is chosen — a path segment
 * longer than `maxParamLength` (414) or not valid percent-encoding (400).
 *
 * @example
 * Fastify({ frameworkErrors: answerFrameworkError })
 */
export function answerFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const failure =
    error.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? failureOfKind('uri_too_long', 'URI Too Long: a segment of the path is longer than any Bruno serves')
      : failureOfKind('invalid_request', 'Bad Request: the path is not valid percent-encoding')
  return answerFailure(request.url, reply, failure)
}

/**
 * Fastify's `clientErrorHandler` (the server's `clientError` event): what Node's HTTP parser
 * refused before Fastify saw a request — headers over Node's limit (431), headers that never came
 * (408), bytes that are not HTTP, such as a body longer than its `Content-Length` read as the next
 * request (400). No path is known here: the REST shape. Written only on a socket nothing was written
 * to yet, as Node's own handler does (a response in progress would be corrupted), then closed.
 *
 * @example
 * Fastify({ clientErrorHandler: answerClientError })
 */
export function answerClientError(this: FastifyInstance, error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return
  const failure =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? failureOfKind('headers_too_large', `Request Header Fields Too Large: the headers are over ${maxHeaderSize} bytes`)
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? failureOfKind('request_timeout', 'Request Timeout: the request did not arrive in time')
        : failureOfKind('invalid_request', 'Bad Request: the bytes sent are not a valid HTTP request (a body longer than its Content-Length?)')
  this.log.debug({ code: error.code, status: failure.status }, 'refused by the HTTP parser')
  if (socket.writable && socket.bytesWritten === 0) {
    const body = JSON.stringify(restErrorBody(failure))
    socket.write(
      `HTTP/1.1 ${failure.status} ${STATUS_CODES[failure.status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    )
  }
  socket.destroy(error)
}

/**
 * Every method but POST on `url`: 405, `Allow: POST`, with `payload` (the binding's JSON-RPC
 * error). Answered on request, before the body is read: a PUT's empty or unreadable body is still
 * a 405, not a parse error. HEAD follows GET (Fastify's `exposeHeadRoutes`).
 *
 * @example
 * onlyPost(app, '/rpc', '{"jsonrpc":"2.0","id":null,"error":{…}}')
 */
export function onlyPost(app: FastifyInstance, url: string, payload: string): void {
  const refuse = async (_request: FastifyRequest, reply: FastifyReply) =>
    reply.code(405).header('allow', 'POST').type('application/json; charset=utf-8').send(payload)
  app.route({ method: app.supportedMethods.filter((method) => method !== 'POST' && method !== 'HEAD'), url, onRequest: refuse, handler: refuse })
}
