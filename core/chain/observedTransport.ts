import type { Transport } from 'viem'
import type { Metrics } from '../metrics.ts'

/**
 * Wraps a transport so that every RPC request's duration, and its failure if it fails, is
 * recorded per chain and JSON-RPC method: a revert (JSON-RPC code 3, or "execution reverted")
 * apart from a failure of the node, since the relay's own probes revert by design and an operator
 * watches the failures. Labels carry the chain's configured name, never the URL.
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
        ;(isRevert(error) ? metrics.rpcReverts : metrics.rpcErrors).inc(labels)
        throw error
      } finally {
        stop()
      }
    }
    return { ...created, request }
  }
}

/** The node's answer that the call reverted, as geth, reth and anvil give it. */
function isRevert(error: unknown): boolean {
  const { code, message } = error as { code?: unknown; message?: unknown }
  return code === 3 || (typeof message === 'string' && /execution reverted/i.test(message))
}
