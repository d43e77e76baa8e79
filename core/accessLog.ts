import { LogController, type FastifyReply, type FastifyRequest } from 'fastify'

/**
 * One access-log line per request, written when it completes: method, path, status and time,
 * under the request's id. A request Bruno answered (status below 400) is logged at debug: at info
 * the log keeps what an operator acts on (refusals, submissions, faults; the volume is in
 * `/metrics`), and a line per answered request would cost a served `tools/call` a sixth of its CPU
 * (bench/RESULTS.md). A refused request (4xx) is logged at info, a failed one at error, except the
 * routine probes: a `405` (`GET /mcp`, which clients try for a stream Bruno never opens) and any
 * `/readyz` answer (a failing chain writes one line per change of state there, not one per probe)
 * are logged at debug.
 * Fastify's default writes two lines (incoming and completed) for one request's information.
 *
 * @example
 * Fastify({ loggerInstance, logController: new AccessLog() })
 */
export class AccessLog extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const line = { method: request.method, url: request.url, statusCode: reply.statusCode, responseTime: reply.elapsedTime }
    if (error) reply.log.error({ ...line, err: error }, 'request errored')
    else if (reply.statusCode >= 400 && !isRoutineProbe(request, reply.statusCode)) reply.log.info(line, 'request completed')
    else reply.log.debug(line, 'request completed')
  }
}

function isRoutineProbe(request: FastifyRequest, statusCode: number): boolean {
  return statusCode === 405 || request.routeOptions.url === '/readyz'
}
