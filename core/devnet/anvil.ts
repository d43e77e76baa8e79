import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import type { Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { DEVNET_CHAIN_ID } from './chain.ts'

/** A running anvil node. */
export type Anvil = {
  /** `http://127.0.0.1:<port>` */
  rpcUrl: string
  port: number
  /** Kills the node and resolves once it has exited. Safe to call twice. */
  stop(): Promise<void>
}

export type StartAnvilOptions = {
  /** TCP port on 127.0.0.1; `0` (the default) lets the OS pick a free one. */
  port?: number
  /** Seconds between blocks; leave undefined for automine (a block per transaction). */
  blockTime?: number
  /** Defaults to 31337 (`DEVNET_CHAIN_ID`), anvil's own. */
  chainId?: number
  /**
   * How far before now the chain's clock starts (seconds; default 3600): the genesis block is that
   * old, so what is deployed first has that much history when `deployDevnet` brings the clock to now
   * (the relay prices against the pool's time-weighted price, which needs a past).
   */
  historySec?: number
  /** Records every opcode step, so `debug_traceTransaction` answers struct logs (bench:gas reads them); slower. */
  stepsTracing?: boolean
}

// The platform packages @foundry-rs/anvil lists as optionalDependencies, keyed the way its
// own const.mjs keys them: process.platform, then process.arch.
const platformPackages = {
  darwin: { x64: '@foundry-rs/anvil-darwin-amd64', arm64: '@foundry-rs/anvil-darwin-arm64' },
  linux: { x64: '@foundry-rs/anvil-linux-amd64', arm64: '@foundry-rs/anvil-linux-arm64' },
  win32: { x64: '@foundry-rs/anvil-win32-amd64' },
} as const satisfies Record<string, Record<string, string>>

const startupTimeoutMs = 15_000

/**
 * Path of the anvil binary shipped by the `@foundry-rs/anvil` npm package for this platform.
 *
 * @example
 * anvilBinary() // '/repo/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil'
 */
export function anvilBinary(): string {
  const byArch: Partial<Record<string, string>> | undefined =
    platformPackages[process.platform as keyof typeof platformPackages]
  const platformPackage = byArch?.[process.arch]
  if (platformPackage === undefined)
    throw new Error(
      `anvil: @foundry-rs/anvil ships no binary for ${process.platform}/${process.arch}` +
        ` (it has linux x64/arm64, darwin x64/arm64, win32 x64)`,
    )
  const binaryName = process.platform === 'win32' ? 'anvil.exe' : 'anvil'
  // Resolve from the wrapper package: the platform package is its optional dependency, so npm
  // may nest it under the wrapper rather than hoist it next to us.
  const wrapperJson = createRequire(import.meta.url).resolve('@foundry-rs/anvil/package.json')
  try {
    const platformJson = createRequire(wrapperJson).resolve(`${platformPackage}/package.json`)
    return join(dirname(platformJson), 'bin', binaryName)
  } catch {
    // When optional dependencies were skipped, the wrapper's postinstall downloads the binary
    // into the wrapper's own folder instead.
    const downloaded = join(dirname(wrapperJson), binaryName)
    if (existsSync(downloaded)) return downloaded
    throw new Error(
      `anvil: neither ${platformPackage} nor the postinstall download of @foundry-rs/anvil is` +
        ` installed; reinstall without --omit=optional`,
    )
  }
}

/**
 * Starts anvil on 127.0.0.1 and resolves once it answers `eth_chainId` with the requested id.
 *
 * The node never keeps the parent process alive on its own, and it is killed when the parent
 * exits (or dies of SIGINT/SIGTERM/SIGHUP with no other handler installed), so a forgotten
 * `stop()` leaves no stray process behind. Off Windows it is killed even when the parent dies
 * of SIGKILL, which runs no handler: see {@link PARENT_GUARD}. Its output is read and discarded.
 *
 * @example
 * const anvil = await startAnvil()
 * const client = createPublicClient({ chain: foundry, transport: http(anvil.rpcUrl) })
 * await client.getBlockNumber() // 0n
 * await anvil.stop()
 */
export async function startAnvil(options: StartAnvilOptions = {}): Promise<Anvil> {
  const { port = 0, blockTime, chainId = DEVNET_CHAIN_ID, historySec = 3_600, stepsTracing = false } = options
  const genesis = Math.floor(Date.now() / 1000) - historySec
  const args = ['--host', '127.0.0.1', '--port', String(port), '--chain-id', String(chainId), '--timestamp', String(genesis)]
  if (blockTime !== undefined) args.push('--block-time', String(blockTime))
  if (stepsTracing) args.push('--steps-tracing')

  // anvil pages the states of older blocks out to ~/.foundry/anvil/tmp and, killed, leaves them there
  // (gigabytes after a long bench): each node gets a home of its own, deleted once it has exited.
  const home = mkdtempSync(join(tmpdir(), 'bruno-anvil-'))
  const env = { ...process.env, HOME: home }
  const child =
    process.platform === 'win32'
      ? spawn(anvilBinary(), args, { stdio: ['ignore', 'pipe', 'pipe'], env })
      : // Its own process group (the guard, anvil, the watcher), killed as one by stop().
        spawn('/bin/sh', ['-c', PARENT_GUARD, anvilBinary(), ...args], { stdio: ['pipe', 'pipe', 'pipe'], detached: true, env })
  track(child, home)
  try {
    const boundPort = await listeningPort(child)
    const rpcUrl = `http://127.0.0.1:${boundPort}`
    await expectChainId(rpcUrl, chainId)
    // Drain the logs from here on (automine prints every transaction), so a full pipe never
    // stalls the node; then let the parent exit without waiting for us.
    child.stdout!.resume()
    child.stderr!.resume()
    ;(child.stdout as Socket).unref()
    ;(child.stderr as Socket).unref()
    if (child.stdin) (child.stdin as Socket).unref()
    child.unref()
    return { rpcUrl, port: boundPort, stop: () => kill(child) }
  } catch (error) {
    await kill(child)
    throw error
  }
}

/**
 * anvil's guard against outliving us, as `sh -c PARENT_GUARD <anvil> <args…>`: it runs anvil, and
 * a watcher that reads the guard's stdin, a pipe whose only writer is this process. When this
 * process ends, however it ends (SIGKILL runs no handler, and anvil has no parent-death option),
 * the kernel closes the pipe; the watcher reads end-of-file and kills anvil, and the guard exits
 * with it. When anvil exits first, the guard ends the watcher and exits with anvil's status.
 */
const PARENT_GUARD = `exec 3<&0
"$0" "$@" </dev/null 3<&- &
anvil=$!
(read -r _ <&3; kill -9 "$anvil") 2>/dev/null &
watcher=$!
exec 3<&-
wait "$anvil"
status=$?
kill "$watcher" 2>/dev/null
exit "$status"`

// anvil prints "Listening on 127.0.0.1:<port>" once bound; reading it (rather than probing for a
// free port ourselves) leaves no window for another process to take the port.
function listeningPort(child: ChildProcess): Promise<number> {
  return new Promise((resolve, reject) => {
    let stdout = ''
    let stderr = ''
    const finish = (settle: () => void) => {
      clearTimeout(timer)
      child.stdout!.off('data', onStdout)
      child.stderr!.off('data', onStderr)
      child.off('exit', onExit)
      child.off('error', onError)
      settle()
    }
    const fail = (why: string) =>
      finish(() => reject(new Error(`anvil: ${why}${stderr ? `: ${stderr.trim()}` : ''}`)))
    const onStdout = (chunk: Buffer) => {
      stdout += chunk
      const match = /Listening on 127\.0\.0\.1:(\d+)/.exec(stdout)
      if (match) finish(() => resolve(Number(match[1])))
    }
    const onStderr = (chunk: Buffer) => {
      stderr += chunk
    }
    const onExit = (code: number | null, signal: string | null) =>
      fail(`exited before listening (code ${code}, signal ${signal})`)
    const onError = (error: Error) => fail(`could not be spawned (${error.message})`)
    const timer = setTimeout(() => fail(`not listening after ${startupTimeoutMs} ms`), startupTimeoutMs)
    child.stdout!.on('data', onStdout)
    child.stderr!.on('data', onStderr)
    child.once('exit', onExit)
    child.once('error', onError)
  })
}

// "Listening" is printed once the socket is bound; a request confirms the RPC server answers
// and that it is the chain we asked for. A short retry covers the gap between bind and serve.
async function expectChainId(rpcUrl: string, chainId: number): Promise<void> {
  const deadline = Date.now() + startupTimeoutMs
  let answer = await rpcChainId(rpcUrl)
  while (answer === undefined) {
    if (Date.now() > deadline) throw new Error('anvil: no answer to eth_chainId')
    await new Promise((resolve) => setTimeout(resolve, 20))
    answer = await rpcChainId(rpcUrl)
  }
  if (Number(answer) !== chainId)
    throw new Error(`anvil: eth_chainId answered ${answer}, expected ${chainId}`)
}

async function rpcChainId(rpcUrl: string): Promise<string | undefined> {
  try {
    const response = await fetch(rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
    })
    return ((await response.json()) as { result?: string }).result
  } catch {
    return undefined
  }
}

// Nothing of the chain is kept (its paged-out states go with its home), and SIGKILL cannot be
// ignored, so stop() always settles promptly.
async function kill(child: ChildProcess): Promise<void> {
  // No pid: the spawn itself failed, and no 'exit' will ever come.
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return
  const exited = once(child, 'exit')
  // Re-ref so the event loop stays up until the exit arrives: stop() may be awaited as the
  // process winds down (tap runs root teardowns then), with nothing else keeping it alive.
  child.ref()
  killNow(child)
  await exited
}

// Off Windows the child leads its own process group (the guard, anvil and the watcher): all of
// it goes at once.
function killNow(child: ChildProcess): void {
  if (process.platform === 'win32' || child.pid === undefined) {
    child.kill('SIGKILL')
    return
  }
  try {
    process.kill(-child.pid, 'SIGKILL')
  } catch {
    // ESRCH: the group is gone already.
  }
}

// Every live anvil of this process, so one set of process hooks serves them all (no listener
// per node, hence no MaxListeners warning when a test starts many).
const live = new Map<ChildProcess, string>()
const shutdownSignals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const

function killAll() {
  for (const [child, home] of live) {
    killNow(child)
    rmSync(home, { recursive: true, force: true })
  }
}

// Dying of a signal skips 'exit' handlers (tap times a test out with SIGTERM). When no one else
// handles the signal, do what Node would have done, after killing the nodes: die of it.
function onSignal(signal: NodeJS.Signals) {
  if (process.listenerCount(signal) > 1) return // the app owns shutdown; 'exit' still fires
  killAll()
  live.clear()
  removeHooks()
  process.kill(process.pid, signal)
}

/** Follows a node until it exits, then deletes `home`, its state's. */
function track(child: ChildProcess, home: string) {
  if (live.size === 0) {
    process.on('exit', killAll)
    for (const signal of shutdownSignals) process.on(signal, onSignal)
  }
  live.set(child, home)
  const untrack = () => {
    rmSync(home, { recursive: true, force: true })
    if (live.delete(child) && live.size === 0) removeHooks()
  }
  // 'error' without 'exit' is how a failed spawn ends.
  child.once('exit', untrack)
  child.once('error', untrack)
}

function removeHooks() {
  process.off('exit', killAll)
  for (const signal of shutdownSignals) process.off(signal, onSignal)
}
