import { execFileSync } from 'node:child_process'
import { cpus, loadavg, platform, release, totalmem } from 'node:os'
import { fileURLToPath } from 'node:url'

/**
 * The machine a bench runs on, as bench/RESULTS.md reports it: a figure means little without the
 * CPU, the commit measured (`-dirty` when tracked files have changes) and the load beside it.
 *
 * @example
 * const host = machine() // { cpu: 'AMD EPYC …', cores: 2, …, commit: 'db3b00d-dirty', loadAverage: 1.2 }
 */
export function machine() {
  const cores = cpus()
  let commit = 'unknown'
  try {
    const git = (...gitArgs: string[]) => execFileSync('git', gitArgs, { cwd: fileURLToPath(new URL('..', import.meta.url)), encoding: 'utf8' }).trim()
    commit = git('rev-parse', '--short', 'HEAD') + (git('status', '--porcelain', '--untracked-files=no') ? '-dirty' : '')
  } catch {}
  return {
    cpu: cores[0]?.model ?? 'unknown',
    cores: cores.length,
    memoryGb: Math.round(totalmem() / 2 ** 30),
    os: `${platform()} ${release()}`,
    node: process.version,
    commit,
    /** The 1-minute load average when the run started: other work on the machine skews every figure. */
    loadAverage: loadAverageNow(),
  }
}

/** The 1-minute load average, two decimals. */
export function loadAverageNow(): number {
  return Math.round(loadavg()[0]! * 100) / 100
}
