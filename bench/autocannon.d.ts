// The part of autocannon's API the bench uses (the package ships no types).
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events'

  interface Options {
    url: string
    method?: string
    headers?: Record<string, string>
    body?: string
    connections?: number
    duration?: number
    amount?: number
    timeout?: number
    verifyBody?: (body: string) => boolean
  }

  interface Result {
    duration: number
    errors: number
    timeouts: number
    mismatches: number
    non2xx: number
    '2xx': number
    requests: { total: number; average: number }
  }

  interface Instance extends EventEmitter {
    stop(): void
  }

  function autocannon(options: Options, callback: (error: Error | null, result: Result) => void): Instance
  export default autocannon
}
