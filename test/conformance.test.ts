import t from 'tap'
import { spawn } from 'node:child_process'
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startDevnetBruno } from './fixtures/devnetBruno.ts'

// The official MCP conformance suite (@modelcontextprotocol/conformance, pinned in package.json)
// against Bruno's /mcp on the devnet: its server scenarios at 2026-07-28 (the revision's frozen
// requirement set, with the not-scored Tasks-extension and pending scenarios it also runs),
// 2025-11-25 and 2025-06-18. Every failing check must be in test/conformance-baseline.yml (the
// fixture-only ones, each with its reason); the CLI fails a run on any other failure and on a
// baseline entry that now passes, and this test checks the same from the results it writes.

const BASELINE = fileURLToPath(new URL('conformance-baseline.yml', import.meta.url))
// The CLI imports fs.globSync (Node 22+) for a command we do not run: this hook lets it load on Node 20.
const NODE20_HOOK = fileURLToPath(new URL('fixtures/conformance-node20.mjs', import.meta.url))
const require = createRequire(import.meta.url)
const manifestPath = require.resolve('@modelcontextprotocol/conformance/package.json')
const manifest = JSON.parse(await readFile(manifestPath, 'utf8')) as { version: string; bin: { conformance: string } }
const CLI = join(dirname(manifestPath), manifest.bin.conformance)

const RUNS = [
  { version: '2026-07-28', selection: ['--requirements', '2026-07-28'] },
  { version: '2025-11-25', selection: ['--spec-version', '2025-11-25'] },
  { version: '2025-06-18', selection: ['--spec-version', '2025-06-18'] },
] as const

/** Checks that must run and pass in each version: the protocol behaviour the suite tests without its fixtures. */
const MUST_PASS: Record<(typeof RUNS)[number]['version'], string[]> = {
  '2026-07-28': [
    'server-stateless:sep-2575-server-implements-discover',
    'server-stateless:sep-2575-http-server-meta-invalid-400',
    'server-stateless:sep-2575-http-server-header-mismatch-400',
    'server-stateless:sep-2575-http-server-unsupported-version-400',
    'server-stateless:sep-2575-http-server-method-not-found-404-initialize',
    'server-stateless:sep-2575-http-server-method-not-found-404-ping',
    'server-stateless:sep-2575-discover-capabilities-match-handlers',
    'sep-2164-resource-not-found:sep-2164-error-code',
    'caching:sep-2549-tools-list-caching-hints',
    'caching:sep-2549-resources-read-caching-hints',
    'tools-list:tools-list',
    'prompts-list:prompts-list',
    'resources-list:resources-list',
    'dns-rebinding-protection:localhost-host-rebinding-rejected',
    'http-header-validation:sep-2243-server-reject-invalid-headers',
    'http-header-validation:sep-2243-header-name-case-insensitive',
  ],
  '2025-11-25': ['server-initialize:server-initialize', 'ping:ping', 'tools-list:tools-list', 'prompts-list:prompts-list', 'resources-list:resources-list'],
  '2025-06-18': ['server-initialize:server-initialize', 'ping:ping', 'tools-list:tools-list', 'prompts-list:prompts-list', 'resources-list:resources-list'],
}

interface Check {
  readonly id: string
  readonly status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'SKIPPED' | 'INFO'
  readonly errorMessage?: string
}

/** The baseline's entries, each with the reason its line gives after `#`. */
async function readBaseline(): Promise<Map<string, string>> {
  const entries = new Map<string, string>()
  for (const line of (await readFile(BASELINE, 'utf8')).split('\n')) {
    const entry = /^\s*-\s+(\S+)(?:\s+#\s*(.*))?$/.exec(line)
    if (entry) entries.set(entry[1]!, entry[2]?.trim() ?? '')
  }
  return entries
}

/** `<output dir>/server-<scenario>-<timestamp>/checks.json` → every `scenario:check-id` with its statuses. */
async function readResults(dir: string): Promise<Map<string, Check[]>> {
  const results = new Map<string, Check[]>()
  for (const name of await readdir(dir)) {
    const scenario = name.replace(/^server-/, '').replace(/-\d{4}-\d{2}-\d{2}T[\d-]+Z$/, '')
    const checks = JSON.parse(await readFile(join(dir, name, 'checks.json'), 'utf8')) as Check[]
    for (const check of checks) {
      const key = `${scenario}:${check.id}`
      results.set(key, [...(results.get(key) ?? []), check])
    }
  }
  return results
}

function runCli(args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', NODE20_HOOK, CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.on('data', (chunk: Buffer) => (output += chunk))
    child.stderr.on('data', (chunk: Buffer) => (output += chunk))
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, output }))
  })
}

const failing = (check: Check) => check.status === 'FAILURE' || check.status === 'WARNING'

const baseline = await readBaseline()
const bruno = await startDevnetBruno(t)
const out = await mkdtemp(join(tmpdir(), 'bruno-conformance-'))
t.teardown(() => rm(out, { recursive: true, force: true }))
/** Baseline entries that failed in some run: each must be needed by at least one version. */
const usedEntries = new Set<string>()

t.test('the baseline gives every entry a reason', async (t) => {
  t.ok(baseline.size > 0)
  for (const [entry, reason] of baseline) t.ok(reason.length > 10, `${entry} has a one-line reason`)
})

for (const { version, selection } of RUNS) {
  t.test(`conformance ${manifest.version}, server scenarios at ${version}`, async (t) => {
    const dir = join(out, version)
    const { code, output } = await runCli(['server', '--url', bruno.mcpUrl, ...selection, '--expected-failures', BASELINE, '-o', dir])
    const verdict = output.slice(output.indexOf('=== SUMMARY'))
    t.equal(code, 0, 'the CLI finds no unexpected failure and no stale baseline entry', { verdict })

    const results = await readResults(dir)
    const unexpected: string[] = []
    const stale: string[] = []
    let passed = 0
    let expected = 0
    for (const [key, checks] of results) {
      if (checks.some(failing)) {
        if (baseline.has(key)) {
          expected++
          usedEntries.add(key)
        } else unexpected.push(`${key}: ${checks.find(failing)!.errorMessage ?? checks.find(failing)!.status}`)
      } else if (checks.some((check) => check.status === 'SUCCESS')) {
        passed++
        if (baseline.has(key)) stale.push(key)
      }
    }
    t.same(unexpected, [], 'every failing check is a fixture-only one in the baseline')
    t.same(stale, [], 'no baseline entry passes')
    for (const key of MUST_PASS[version]) t.ok(results.get(key)?.every((check) => check.status === 'SUCCESS'), `${key} ran and passed`)
    const scenarios = new Set([...results.keys()].map((key) => key.split(':')[0]))
    t.comment(`${version}: ${scenarios.size} scenarios, ${passed} checks passed, ${unexpected.length} failed, ${expected} fixture-only (baseline)`)
  })
}

t.test('every baseline entry fails in some version (none is left over)', async (t) => {
  t.same([...baseline.keys()].filter((entry) => !usedEntries.has(entry)), [])
})
