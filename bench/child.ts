/**
 * The server side of a bench child: answers the orchestrator's IPC questions about this process
 * (CPU time, RSS), outside the measured HTTP path, and stops when asked.
 *
 * @example
 * const url = await listen()
 * serveBenchIpc(url, () => app.close())
 */

export interface ProcessStats {
  readonly type: 'stats'
  /** process.cpuUsage(): user and system µs since the process started */
  readonly cpu: NodeJS.CpuUsage
  readonly rss: number
  readonly heapUsed: number
}

/** `collect`: run a full garbage collection first (server children run with --expose-gc), to tell held memory from garbage. */
export type ParentMessage = { readonly type: 'stats'; readonly collect?: boolean } | { readonly type: 'stop' }

export function serveBenchIpc(url: string, close: () => Promise<void>): void {
  const send = process.send?.bind(process)
  if (!send) throw new Error('a bench server runs as a forked child (it reports over IPC)')
  process.on('message', (message: ParentMessage) => {
    if (message.type === 'stats') {
      if (message.collect) (globalThis as { gc?: () => void }).gc?.()
      const memory = process.memoryUsage()
      const stats: ProcessStats = { type: 'stats', cpu: process.cpuUsage(), rss: memory.rss, heapUsed: memory.heapUsed }
      send(stats)
    } else if (message.type === 'stop') {
      close().then(
        () => process.exit(0),
        () => process.exit(1),
      )
    }
  })
  // The orchestrator gone (killed, crashed): nothing left to serve.
  process.on('disconnect', () => process.exit(0))
  send({ type: 'ready', url })
}
