import type { Transport } from 'viem'
import type { Metrics } from '../metrics.ts'

/**
 * Wraps a transport so that every RPC request's duration, and its failure if it fails, is
 * recorded per chain and JSON-RPC method. Labels carry the chain's configured name, never the URL.
 *
 * @example
 * const transport = observedTransport('base', http(process.env.BASE_RPC), metrics)
 */
export function observedTransport(chain: string, inner: Transport, metrics: Metrics): Transport {
  return (options) => {
    const created = inner(options)
    const request: typeof created.request = async (args, requestOptions) => {
      const labels = { chain, method: args.method }
      const stop = metrics.rpcDuration.startTimer(labels)
      try {
        return await created.request(args, requestOptions)
      } catch (error) {
        metrics.rpcErrors.inc(labels)
        throw error
      } finally {
        stop()
      }
    }
    return { ...created, request }
  }
}
