/**
 * How long the operator endpoints (`/readyz`, `/metrics`) reuse a chain read: they are not
 * rate-limited, so without it every probe or scrape would be one more RPC request per chain.
 */
export const OPERATOR_READ_INTERVAL_MS = 2_000

/**
 * `read`, shared: concurrent callers share the one read in flight, and its outcome (a value or a
 * failure) is reused until `intervalMs` after it settled. So `read` runs at most once per
 * interval, however often it is asked for, and never twice at once.
 *
 * @example
 * const latestBlock = sharedRead(() => client.getBlock({ blockTag: 'latest' }))
 * await Promise.all([latestBlock(), latestBlock()]) // one eth_getBlockByNumber
 */
export function sharedRead<T>(read: () => Promise<T>, intervalMs = OPERATOR_READ_INTERVAL_MS, now: () => number = Date.now): () => Promise<T> {
  let last: { readonly outcome: Promise<T>; settledAt?: number } | undefined
  return () => {
    if (last && (last.settledAt === undefined || now() - last.settledAt < intervalMs)) return last.outcome
    const entry: { readonly outcome: Promise<T>; settledAt?: number } = { outcome: read() }
    const settled = () => {
      entry.settledAt = now()
    }
    // Also keeps a failure no caller awaits from being an unhandled rejection.
    entry.outcome.then(settled, settled)
    last = entry
    return entry.outcome
  }
}
