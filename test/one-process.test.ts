import type { ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { hostname, tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { openStore } from '../core/store/openStore.ts'
import { StoreInUseError, storeHolder } from '../core/store/sqliteLock.ts'
import { offlineConfig } from './fixtures/bruno.ts'
import { spawnOwned } from './fixtures/ownedProcess.ts'

// One runner per key (issue 13, point 8): a SQLite store is one process's, and the PID an
// operator starts (`npm start`'s, or the process its script runs) is Bruno itself, whose death
// leaves nothing behind — no Bruno, no devnet anvil.

const repo = new URL('..', import.meta.url).pathname
// Each test starts Bruno (and the devnet) afresh: 40 s alone on a quiet 2-core machine, 127 s beside
// a second copy of the suite (2026-12-02), near tap's 180 s. The limit catches a hang, not slowness.
t.setTimeout(360_000)

interface Started {
  readonly child: ChildProcess
  /** Resolves with the MCP URL once Bruno serves; rejects if it exits first. */
  readonly serving: Promise<string>
  /** Resolves with the exit code (or signal) and everything written to stderr. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>
}

function start(t: Test, command: string, args: string[], env: NodeJS.ProcessEnv): Started {
  const child = spawnOwned(t, command, args, { cwd: repo, env })
  let stdout = ''
  let stderr = ''
  child.stderr!.on('data', (chunk) => (stderr += chunk))
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal, stderr })),
  )
  const serving = new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (chunk) => {
      stdout += chunk
      const found = /Bruno is serving MCP at (\S+)/.exec(stdout)
      if (found) resolve(found[1]!)
    })
    void exited.then(({ code, signal }) => reject(new Error(`exited (${code ?? signal}) before serving: ${stderr.slice(-2000)}`)))
  })
  serving.catch(() => {})
  return { child, serving, exited }
}

/** A process as /proc shows it. */
interface Proc {
  readonly pid: number
  readonly ppid: number
  readonly state: string
  readonly cmdline: string
}

function proc(pid: number): Proc | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // "pid (comm) state ppid …": comm may hold spaces and parentheses, so read after the last ')'.
    const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim()
    return { pid, ppid: Number(ppid), state: state!, cmdline }
  } catch {
    return undefined
  }
}

/** Every live descendant of `root` (zombies, already dead, left out). */
function descendants(root: number): Proc[] {
  const all = readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map((name) => proc(Number(name)))
    .filter((found): found is Proc => found !== undefined && found.state !== 'Z')
  const found: Proc[] = []
  const parents = new Set([root])
  for (let grew = true; grew; ) {
    grew = false
    for (const each of all) {
      if (parents.has(each.ppid) && !parents.has(each.pid)) {
        parents.add(each.pid)
        found.push(each)
        grew = true
      }
    }
  }
  return found
}

/** Whether a process is anvil itself (not the guard whose command line names it). */
const isAnvil = (each: Proc) => each.cmdline.split(' ')[0]!.endsWith('/anvil')

/** Whether `pid` is still running (a zombie is not). */
function alive(pid: number): boolean {
  const found = proc(pid)
  return found !== undefined && found.state !== 'Z'
}

async function until(what: string, done: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<number> {
  const started = Date.now()
  while (!(await done())) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting until ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return Date.now() - started
}

async function answers(url: string): Promise<boolean> {
  try {
    await fetch(url, { signal: AbortSignal.timeout(1_000) })
    return true
  } catch {
    return false
  }
}

t.test('in one process: a second open of a held file is refused; closed, it is free; :memory: takes no lock', async (t) => {
  const path = join(mkdtempSync(join(tmpdir(), 'bruno-lock-')), 'bruno.sqlite')
  const first = openStore({ kind: 'sqlite', path }, {})
  let refusal: unknown
  try {
    openStore({ kind: 'sqlite', path }, {})
  } catch (error) {
    refusal = error
  }
  t.type(refusal, StoreInUseError, 'the second open is refused')
  t.match((refusal as StoreInUseError).holder, { pid: process.pid, host: hostname(), since: Number }, 'naming the holder')
  await first.store.close()
  const again = openStore({ kind: 'sqlite', path }, {})
  await again.store.close()
  const memory = [openStore({ kind: 'sqlite', path: ':memory:' }, {}), openStore({ kind: 'sqlite', path: ':memory:' }, {})]
  await Promise.all(memory.map(({ store }) => store.close()))
})

t.test('a SQLite store is one process\'s: the second refuses to start, naming the holder; a SIGKILLed holder leaves it free', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'bruno-lock-'))
  const storePath = join(dir, 'bruno.sqlite')
  const env: NodeJS.ProcessEnv = { ...process.env }
  // The relay's group: its runner is what must not run twice on one file. The chain is never dialled.
  const config = offlineConfig(env, { groups: ['bruno'], store: { kind: 'sqlite', path: storePath } })
  const configPath = join(dir, 'bruno.json')
  writeFileSync(configPath, JSON.stringify(config))
  const serve = () => start(t, process.execPath, ['--import', 'tsx', 'core/cli.ts', 'serve', '--config', configPath, '--no-preflight'], env)

  const first = serve()
  const firstUrl = await first.serving
  t.equal(storeHolder(storePath)?.pid, first.child.pid, 'the holder recorded its PID in the store')
  t.ok(existsSync(`${storePath}.lock`), 'the lock file beside the store')

  const second = serve()
  const refused = await second.exited
  t.equal(refused.code, 1, 'the second process exits 1')
  t.match(
    refused.stderr,
    `bruno: store.path ${storePath} is in use by another Bruno (PID ${first.child.pid} on host ${hostname()}, since `,
    'naming the file, and the holder\'s PID and host',
  )
  t.comment(refused.stderr.trim().split('\n').at(-1)!)
  await t.rejects(second.serving, 'it never served')
  t.equal(await answers(`${firstUrl.replace(/\/mcp$/, '')}/healthz`), true, 'the first serves on')

  first.child.kill('SIGKILL')
  t.equal((await first.exited).signal, 'SIGKILL')

  // The kernel dropped the dead holder's lock: the next start takes the store at once.
  const third = serve()
  const thirdUrl = await third.serving
  t.equal(storeHolder(storePath)?.pid, third.child.pid, 'the new holder recorded itself')
  const health = await fetch(`${thirdUrl.replace(/\/mcp$/, '')}/healthz`)
  t.equal(health.status, 200)
  third.child.kill('SIGTERM')
  t.equal((await third.exited).code, 0, 'a clean stop')

  // A clean stop gives the store up too.
  const fourth = serve()
  await fourth.serving
  fourth.child.kill('SIGTERM')
  t.equal((await fourth.exited).code, 0)
})

t.test('SIGKILL of the PID `npm start` runs as leaves no Bruno and no anvil', async (t) => {
  const script = (JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.start!
  t.equal(script, 'exec node --import tsx core/cli.ts', 'npm start: one node process, which the shell execs into')
  const [node, ...args] = script.replace(/^exec /, '').split(' ')
  t.equal(node, 'node')

  const bruno = start(t, process.execPath, [...args, '--port', '0'], { ...process.env })
  const url = (await bruno.serving).replace(/\/mcp$/, '')
  const tree = descendants(bruno.child.pid!)
  const anvils = tree.filter(isAnvil)
  t.equal(anvils.length, 1, 'the devnet\'s anvil runs under it')
  t.notOk(tree.some((each) => each.cmdline.includes('core/cli.ts')), 'no second Bruno process under it')

  t.comment(`under it: ${tree.map((each) => `${each.pid} ${each.cmdline.split(' ')[0]!.split('/').at(-1)}`).join(', ')}`)
  bruno.child.kill('SIGKILL')
  t.equal((await bruno.exited).signal, 'SIGKILL')
  const ms = await until('every process it started is gone', () => tree.every((each) => !alive(each.pid)))
  t.pass(`its ${tree.length} descendants (anvil among them) gone ${ms} ms after the SIGKILL`)
  t.equal(await answers(`${url}/healthz`), false, 'its port no longer answers')
})

t.test('SIGKILL of `npm start` itself: Bruno, adopted, stops within a second or two, anvil with it', async (t) => {
  const npm = start(t, 'npm', ['start', '--', '--port', '0'], { ...process.env })
  const url = (await npm.serving).replace(/\/mcp$/, '')
  const tree = descendants(npm.child.pid!)
  const brunos = tree.filter((each) => each.cmdline.includes('core/cli.ts'))
  t.equal(brunos.length, 1, 'one Bruno process')
  t.equal(brunos[0]!.ppid, npm.child.pid, 'npm\'s own child: no shell, no tsx CLI in between')
  t.equal(tree.filter(isAnvil).length, 1, 'and the devnet\'s anvil')

  npm.child.kill('SIGKILL')
  await npm.exited
  const ms = await until('every process npm started is gone', () => tree.every((each) => !alive(each.pid)))
  t.pass(`its ${tree.length} descendants gone ${ms} ms after npm's SIGKILL`)
  t.equal(await answers(`${url}/healthz`), false, 'its port no longer answers')
})

t.test('a test file ended however tap ends it (SIGALRM on a timeout, SIGTERM, SIGINT, its own exit) takes what it spawned with it, a process that ignores SIGTERM included', async (t) => {
  for (const end of ['SIGALRM', 'SIGTERM', 'SIGINT', 'exit'] as const) {
    const owner = spawnOwned(t, process.execPath, ['--import', 'tsx', 'test/fixtures/stubbornOwner.ts', end], { cwd: repo })
    const exited = new Promise<void>((resolve) => owner.once('exit', () => resolve()))
    const pid = await new Promise<number>((resolve, reject) => {
      let out = ''
      owner.stdout.on('data', (chunk) => {
        out += chunk
        const found = /spawned (\d+)/.exec(out)
        if (found) resolve(Number(found[1]))
      })
      void exited.then(() => reject(new Error(`the owner ended before spawning: ${out}`)))
    })
    if (end !== 'exit') {
      t.ok(alive(pid), `${end}: the stubborn process runs`)
      owner.kill(end)
    }
    await exited
    const ms = await until(`the stubborn process ${pid} is gone after ${end}`, () => !alive(pid), 5_000)
    t.pass(`${end}: its stubborn child gone ${ms} ms after`)
  }
})
