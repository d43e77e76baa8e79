import { fork, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import type { ParentMessage, ProcessStats } from './child.ts'
import type { LoadMessage, LoadResult, LoadSpec } from './load.ts'
import type { RoundTrip, WatchAction } from './proxy.ts'

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url))
const STARTUP_MS = 60_000

/** A forked child running TypeScript through tsx, with IPC. */
function forkTs(script: string, args: readonly string[], env: NodeJS.ProcessEnv, flags: readonly string[] = []): ChildProcess {
  return fork(here(script), args, { execArgv: ['--import', 'tsx', ...flags], env, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
}

/** The next IPC message of `type` from a child, or an error if it exits first or takes too long. */
function nextMessage<T>(child: ChildProcess, type: string, timeoutMs = STARTUP_MS): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => done(new Error(`no "${type}" from the child within ${timeoutMs} ms`)), timeoutMs)
    const onMessage = (message: { type: string; message?: string }) => {
      if (message.type === type) done(undefined, message as T)
      else if (message.type === 'error') done(new Error(message.message))
    }
    const onExit = (code: number | null) => done(new Error(`the child exited (${code}) before "${type}"`))
    const done = (error?: Error, value?: T) => {
      clearTimeout(timer)
      child.off('message', onMessage)
      child.off('exit', onExit)
      if (error) reject(error)
      else resolve(value as T)
    }
    child.on('message', onMessage)
    child.once('exit', onExit)
  })
}

async function stopChild(child: ChildProcess, message?: ParentMessage): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = once(child, 'exit')
  if (message && child.connected) child.send(message)
  else child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
  await exited
  clearTimeout(timer)
}

/** A server child: its URL, its CPU and memory on request (over IPC, outside the HTTP path). */
export interface ServerChild {
  readonly url: string
  readonly pid: number
  /** CPU and memory now; with `collect`, memory after a full garbage collection. */
  stats(collect?: boolean): Promise<ProcessStats>
  stop(): Promise<void>
}

/** Where server children write CPU profiles (`node --cpu-prof`), when set. */
let profileDir: string | undefined
export function profileServersInto(dir: string | undefined): void {
  profileDir = dir
}

/**
 * Starts `bench/servers/<name>.ts` and waits until it listens.
 *
 * @example
 * const bruno = await startServerChild('bruno')
 * const { cpu, rss } = await bruno.stats()
 */
export async function startServerChild(name: string, args: readonly string[] = [], env: NodeJS.ProcessEnv = process.env): Promise<ServerChild> {
  const profile = profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : []
  const child = forkTs(`./servers/${name}.ts`, args, env, ['--expose-gc', ...profile])
  const { url } = await nextMessage<{ url: string }>(child, 'ready')
  return {
    url,
    pid: child.pid!,
    stats: (collect = false) => {
      const reply = nextMessage<ProcessStats>(child, 'stats', 10_000)
      child.send({ type: 'stats', collect } satisfies ParentMessage)
      return reply
    },
    stop: () => stopChild(child, { type: 'stop' }),
  }
}

/** A load-generator child (bench/load.ts), forked and ready: one load, then it is stopped. */
export interface LoadChild {
  readonly child: ChildProcess
}

/**
 * Forks a load-generator child and waits until it is ready. Fork it beside the server it will load
 * (`runLoad(spec, between, startLoadChild())`): the two start at once instead of one after the other.
 */
export async function startLoadChild(): Promise<LoadChild> {
  const child = forkTs('./load.ts', [], process.env)
  try {
    await nextMessage(child, 'ready')
  } catch (error) {
    await stopChild(child)
    throw error
  }
  return { child }
}

/**
 * Runs one load in a fresh load-generator child (`loader`, forked now when not given): warm-up,
 * then `between()` (the orchestrator's snapshot of the server), then the measured period. The
 * child is stopped afterwards, whatever happened.
 */
export async function runLoad(spec: LoadSpec, between: () => Promise<void>, loader: Promise<LoadChild> = startLoadChild()): Promise<LoadResult> {
  const { child } = await loader
  try {
    const timeoutMs = (spec.warmupSec + spec.durationSec) * 1000 + 120_000
    const warm = nextMessage(child, 'warm', timeoutMs)
    child.send({ type: 'run', spec } satisfies LoadMessage)
    await warm
    await between()
    const result = nextMessage<LoadResult>(child, 'result', timeoutMs)
    child.send({ type: 'go' } satisfies LoadMessage)
    return await result
  } finally {
    await stopChild(child)
  }
}

/** The counting proxy (bench/proxy.ts) in its own process: round trips to the node, on request. */
export interface ProxyChild {
  readonly url: string
  count(): Promise<number>
  since(mark: number): Promise<RoundTrip[]>
  /** Marks round trips carrying 32-byte keys that start with `prefix` (bench/proxy.ts). */
  tag(prefix: string): Promise<void>
  /** Changes `key`'s call once submit has checked it (bench/proxy.ts); resolves once the proxy has it. */
  watch(key: string, action: WatchAction): Promise<void>
  stop(): Promise<void>
}

export async function startProxyChild(target: string): Promise<ProxyChild> {
  const child = forkTs('./proxyChild.ts', [target], process.env)
  const { url } = await nextMessage<{ url: string }>(child, 'ready')
  // One question at a time: the answers carry no id.
  let queue: Promise<unknown> = Promise.resolve()
  const ask = <T>(message: object, type: string): Promise<T> => {
    const next = queue.then(() => {
      const reply = nextMessage<T>(child, type, 10_000)
      child.send(message)
      return reply
    })
    queue = next.catch(() => undefined)
    return next
  }
  return {
    url,
    count: async () => (await ask<{ count: number }>({ type: 'count' }, 'count')).count,
    since: async (mark) => (await ask<{ trips: RoundTrip[] }>({ type: 'since', mark }, 'since')).trips,
    tag: async (prefix) => void (await ask({ type: 'tag', prefix }, 'tagged')),
    watch: async (key, action) => void (await ask({ type: 'watch', key, action }, 'watched')),
    stop: () => stopChild(child, { type: 'stop' }),
  }
}
