import { HttpRequestError, TimeoutError, type Transport } from 'viem'

/**
 * The chain did not answer (refused, timed out, not HTTP 2xx). Its message names the chain and
 * never the RPC URL, which usually carries an API key.
 */
export class ChainUnavailableError extends Error {
  override readonly name = 'ChainUnavailableError'
  constructor(
    readonly chain: string,
    reason: string,
  ) {
    super(`chain "${chain}" is unavailable: ${reason}`)
  }
}

/**
 * Wraps a transport so that a failure to reach the node surfaces as a `ChainUnavailableError`
 * naming the chain. JSON-RPC errors the node answers (reverts included) pass through untouched,
 * so viem can still decode them.
 *
 * @example
 * const transport = guardedTransport('base', http(process.env.BASE_RPC))
 */
export function guardedTransport(chain: string, inner: Transport): Transport {
  return (options) => {
    const created = inner(options)
    const request: typeof created.request = async (args, requestOptions) => {
      try {
        return await created.request(args, requestOptions)
      } catch (error) {
        if (error instanceof TimeoutError) throw new ChainUnavailableError(chain, 'the RPC request timed out')
        if (error instanceof HttpRequestError) throw new ChainUnavailableError(chain, httpFailure(error))
        throw error
      }
    }
    return { ...created, request }
  }
}

/** What went wrong with an HTTP exchange, in words that carry nothing of the request (no URL). */
function httpFailure(error: HttpRequestError): string {
  if (error.status && error.status !== 200) return `the RPC answered HTTP ${error.status}`
  if (/JSON|Unexpected (token|end)/i.test(error.details)) return 'the RPC answered something that is not JSON-RPC'
  // undici puts the socket's fate two causes down: "other side closed" after a partial answer.
  const causes: string[] = []
  for (let cause: unknown = error.cause; cause instanceof Error; cause = cause.cause) causes.push(cause.message)
  if (causes.some((message) => /other side closed|terminated|socket hang up/i.test(message))) return 'the RPC connection broke off mid-answer'
  return 'the RPC could not be reached'
}
