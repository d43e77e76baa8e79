import autocannon from 'autocannon'
import hdr from 'hdr-histogram-js'

/**
 * The load generator, a process of its own (forked by the orchestrator): autocannon against one
 * server, a warm-up, then the measured period. Latencies are recorded here in µs in an HDR
 * histogram (autocannon's own histogram keeps whole milliseconds). Every response body is
 * compared with the expected bytes.
 */

export interface LoadSpec {
  readonly url: string
  readonly headers: Record<string, string>
  readonly body: string
  /** The exact response body every request must get. */
  readonly expected: string
  readonly connections: number
  readonly warmupSec: number
  /** The measured period, or a fixed number of requests when `amount` is set. */
  readonly durationSec: number
  readonly amount?: number
}

export interface LoadResult {
  readonly type: 'result'
  readonly requests: number
  readonly seconds: number
  readonly rps: number
  readonly latencyUs: { readonly p50: number; readonly p90: number; readonly p99: number; readonly max: number }
  /** The latency histogram (µs), encoded, so that the orchestrator can merge several runs. */
  readonly histogram: string
  readonly non2xx: number
  readonly errors: number
  readonly timeouts: number
  readonly mismatches: number
  readonly mismatchSample?: string
}

export type LoadMessage = { type: 'run'; spec: LoadSpec } | { type: 'go' }

const send = process.send?.bind(process)
if (!send) throw new Error('load.ts runs as a forked child')

function run(spec: LoadSpec, measured: boolean): Promise<LoadResult> {
  const histogram = hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: 3 })
  let responses = 0
  let mismatchSample: string | undefined
  const started = process.hrtime.bigint()
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: spec.url,
        method: 'POST',
        headers: spec.headers,
        body: spec.body,
        connections: spec.connections,
        timeout: 10,
        ...(measured && spec.amount ? { amount: spec.amount } : { duration: measured ? spec.durationSec : spec.warmupSec }),
        verifyBody: (body) => {
          if (body === spec.expected) return true
          mismatchSample ??= body.slice(0, 300)
          return false
        },
      },
      (error, result) => {
        if (error) return reject(error)
        const seconds = Number(process.hrtime.bigint() - started) / 1e9
        resolve({
          type: 'result',
          requests: responses,
          seconds,
          rps: responses / seconds,
          latencyUs: {
            p50: histogram.getValueAtPercentile(50),
            p90: histogram.getValueAtPercentile(90),
            p99: histogram.getValueAtPercentile(99),
            max: histogram.maxValue,
          },
          histogram: hdr.encodeIntoCompressedBase64(histogram),
          non2xx: result.non2xx,
          errors: result.errors,
          timeouts: result.timeouts,
          mismatches: result.mismatches,
          ...(mismatchSample === undefined ? {} : { mismatchSample }),
        })
        histogram.destroy()
      },
    )
    instance.on('response', (_client: unknown, statusCode: number, _bytes: number, responseTimeMs: number) => {
      responses++
      if (statusCode >= 200 && statusCode < 300) histogram.recordValue(Math.max(1, Math.round(responseTimeMs * 1000)))
    })
  })
}

process.on('message', (message: LoadMessage) => {
  if (message.type !== 'run') return
  const { spec } = message
  void (async () => {
    if (spec.warmupSec > 0) await run(spec, false)
    send({ type: 'warm' })
    await new Promise<void>((resolve) => {
      const go = (next: LoadMessage) => {
        if (next.type !== 'go') return
        process.off('message', go)
        resolve()
      }
      process.on('message', go)
    })
    send(await run(spec, true))
  })().catch((error: unknown) => {
    send({ type: 'error', message: error instanceof Error ? error.message : String(error) })
  })
})
process.on('disconnect', () => process.exit(0))
send({ type: 'ready' })
