import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

/**
 * `npx tsx bench/profile.ts <dir> [last seconds]`: summarizes the `.cpuprofile` files `npm run bench -- --profile`
 * wrote: self time by function and by package, the top of each.
 */

interface Node {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  hitCount?: number
}
interface Profile {
  startTime: number
  endTime: number
  nodes: Node[]
  samples: number[]
  timeDeltas: number[]
}

function where(url: string): string {
  const modules = url.lastIndexOf('node_modules/')
  if (modules >= 0) {
    const rest = url.slice(modules + 'node_modules/'.length).split('/')
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!
  }
  if (url.startsWith('node:')) return 'node'
  if (url === '') return '(native/gc/idle)'
  const bench = url.indexOf('/bench/')
  const repo = url.match(/\/(core|plugins|config|bench)\/.*$/)
  return repo ? repo[0].slice(1) : bench >= 0 ? url.slice(bench + 1) : url
}

/** Self time by function and by file or package; with `lastSec`, only the profile's last seconds (the measured period, not start-up). */
export function summarize(file: string, lastSec?: number, top = 25): string {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile
  const byId = new Map(profile.nodes.map((node) => [node.id, node]))
  const selfUs = new Map<number, number>()
  const from = lastSec === undefined ? -Infinity : profile.endTime - lastSec * 1e6
  let at = profile.startTime
  profile.samples.forEach((id, index) => {
    const delta = profile.timeDeltas[index] ?? 0
    at += delta
    if (at >= from) selfUs.set(id, (selfUs.get(id) ?? 0) + delta)
  })
  let total = 0
  const byFunction = new Map<string, number>()
  const byPlace = new Map<string, number>()
  for (const [id, us] of selfUs) {
    const node = byId.get(id)!
    const { functionName, url, lineNumber } = node.callFrame
    if (functionName === '(idle)' || functionName === '(program)') continue
    total += us
    const place = where(url)
    const name = `${functionName || '(anonymous)'} ${place}:${lineNumber + 1}`
    byFunction.set(name, (byFunction.get(name) ?? 0) + us)
    const key = functionName === '(garbage collector)' ? '(gc)' : place
    byPlace.set(key, (byPlace.get(key) ?? 0) + us)
  }
  const pct = (us: number) => `${((us / total) * 100).toFixed(1).padStart(5)}%`
  const list = (map: Map<string, number>) =>
    [...map.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, us]) => `  ${pct(us)}  ${name}`)
  return [`${file}: ${(total / 1e6).toFixed(2)} s busy`, 'self time by file or package:', ...list(byPlace), 'self time by function:', ...list(byFunction)].join('\n')
}

const [dir, last] = process.argv.slice(2)
if (dir) {
  for (const name of readdirSync(dir).filter((file) => file.endsWith('.cpuprofile'))) {
    process.stdout.write(`${summarize(join(dir, name), last === undefined ? undefined : Number(last))}\n\n`)
  }
}
