import { LogController, type FastifyReply, type FastifyRequest } from 'fastify'

/**
 * One access-log line per request, written when it completes: method, path, status and time,
 * under the request's id. Fastify's default writes two (incoming and completed), which doubles
 * the logging cost of every MCP call for no more information.
 *
 * @example
 * Fastify({ loggerInstance, logController: new AccessLog() })
 */
export class AccessLog extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const line = { method: request.method, url: request.url, statusCode: reply.statusCode, responseTime: reply.elapsedTime }
    if (error) reply.log.error({ ...line, err: error }, 'request errored')
    else reply.log.info(line, 'request completed')
  }
}
