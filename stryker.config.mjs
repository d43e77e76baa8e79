// StrykerJS over the relay's money and protocol code (issue 16, point 1): `npm run mutate`.
// bench/MUTATION.md (section "Stryker") explains the choices and lists every surviving mutant.
//
// The tap runner runs each test file as one test (node --import=tsx <file>, Stryker's hook
// first) and records which mutants each file reaches ("perTest" coverage, per file): a mutant
// runs only the files that reached it, first to fail wins. Files run in the order below: the
// chain-free unit tests (test/unit/, seconds) first, then the chain-free store and MCP files, then
// the runner loop's files on a real devnet (test/runner/, a few seconds each). The slower devnet
// suites join only with STRYKER_DEVNET=1 (bench/MUTATION.md says why).
//
// Incremental: results are kept in bench/mutation/incremental.json (committed); a re-run tests again
// only the mutants whose code or covering tests changed. `npm run mutate -- --force` starts afresh.
//
// STRYKER_MUTATE / STRYKER_TESTS (comma-separated globs) narrow a run to one area while working on
// it, and STRYKER_REPORT names its own incremental file and reports (so a narrowed run does not
// overwrite the full run's), e.g.
//   STRYKER_REPORT=pricing STRYKER_MUTATE=core/charge/pricing.ts STRYKER_TESTS=test/unit/pricing.test.ts npm run mutate
import { readdirSync } from 'node:fs'

const list = (value) => value?.split(',').map((entry) => entry.trim()).filter(Boolean)

// Named one by one, in order: the tap runner globs, and a glob's matches come in no set order.
const testsIn = (folder) => {
  const url = new URL(`${folder}/`, import.meta.url)
  return readdirSync(url).filter((name) => name.endsWith('.test.ts')).sort().map((name) => `${folder}/${name}`)
}

export const mutate = [
  'core/relay/**/*.ts',
  'core/runner/**/*.ts',
  'core/store/**/*.ts',
  'core/charge/**/*.ts',
  'core/relayService.ts',
  'core/chain/tokenPrice.ts',
  'core/chain/fees.ts',
  'core/chain/l1DataFee.ts',
  'core/mcp/dispatcher.ts',
  'plugins/calibur/**/*.ts',
]

// The main path first (a mutant there dies in the first file), the slowest (a 10 s failing hold) last.
export const runnerTestFiles = [
  'send', 'restart', 'refusals', 'outcome', 'fencing', 'reasons', 'pass-failure', 'replace', 'cancel', 'l1-fee', 'holds', 'holds-failing',
].map((name) => `test/runner/${name}.test.ts`)
const listed = new Set(runnerTestFiles)
const unlisted = testsIn('test/runner').filter((file) => !listed.has(file))
if (unlisted.length > 0) throw new Error(`stryker.config.mjs: add ${unlisted.join(', ')} to runnerTestFiles`)

export const testFiles = [
  // Chain-free, seconds each: first. The schemas' file leads: the schemas are built at module load,
  // so every file reaches their mutants, and only this one pins their texts (a schema mutant that
  // went through the other unit files first cost ~45 s).
  'test/unit/relay-schemas.test.ts',
  ...testsIn('test/unit').filter((file) => file !== 'test/unit/relay-schemas.test.ts'),
  // Chain-free, a Bruno or a store in process: the MCP binding over raw HTTP (dispatcher.ts); the
  // stores, their fencing and the runner key's ownership (sqliteStore, sqliteLock, ownership, observedStore).
  'test/mcp-http.test.ts',
  'test/mcp-prompts-resources.test.ts',
  'test/store.test.ts',
  'test/store-fencing.test.ts',
  'test/liveness-store.test.ts',
  'test/runner-ownership.test.ts',
  // A bare anvil (no deployment): Calibur's encoders against the real vector and anvil's own signer.
  'test/calibur-encoders.test.ts',
  // The runner loop on a real devnet (anvil and the real contracts, deployed in under a second), one
  // behaviour a file, a few seconds each: core/runner/. A mutant runs only the files that reach it.
  ...runnerTestFiles,
]

// The devnet suites (a Bruno end to end, 10-60 s each): with STRYKER_DEVNET=1 they run after the
// files above, for what those leave alive. Off by default: each mutant the fast files leave alive
// would run every devnet file that reaches it, one after another (hours for a full run).
export const devnetTestFiles = [
  'test/relay-signed-transfer.test.ts',
  'test/flow-calibur.test.ts',
  'test/adversarial/price-race.test.ts',
  'test/adversarial/l1-fee.test.ts',
  'test/adversarial/repricing.test.ts',
  'test/adversarial/payer-code.test.ts',
  'test/admission.test.ts',
  'test/relay-deadline.test.ts',
  'test/liveness.test.ts',
  'test/liveness-admission.test.ts',
]

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'tap',
  tap: {
    testFiles: list(process.env.STRYKER_TESTS) ?? (process.env.STRYKER_DEVNET === '1' ? [...testFiles, ...devnetTestFiles] : testFiles),
    // Our tests are TypeScript run through tsx (as .taprc does); Stryker's hook is put first.
    nodeArgs: ['--import=tsx'],
    forceBail: true,
  },
  mutate: list(process.env.STRYKER_MUTATE) ?? mutate,
  coverageAnalysis: 'perTest',
  incremental: true,
  // Kept in git (bench/mutation/): a run on a fresh clone re-tests only what changed since the last one committed.
  incrementalFile: process.env.STRYKER_REPORT ? `bench/mutation/incremental-${process.env.STRYKER_REPORT}.json` : 'bench/mutation/incremental.json',
  // Two cores, shared: one test process at a time (a devnet test starts its own anvil too);
  // STRYKER_CONCURRENCY for a machine of one's own.
  concurrency: Number(process.env.STRYKER_CONCURRENCY ?? 1),
  // A devnet file takes tens of seconds; a mutant that hangs it is a timeout, not a survivor.
  timeoutMS: 60_000,
  timeoutFactor: 2,
  dryRunTimeoutMinutes: 60,
  reporters: ['clear-text', 'progress', 'html', 'json'],
  htmlReporter: { fileName: `reports/mutation/${process.env.STRYKER_REPORT ?? 'mutation'}.html` },
  jsonReporter: { fileName: `reports/mutation/${process.env.STRYKER_REPORT ?? 'mutation'}.json` },
  clearTextReporter: { allowColor: false, reportScoreTable: true, reportMutants: false },
  thresholds: { high: 85, low: 70, break: null },
  // Stryker rewrites the tsconfig's out-of-sandbox paths through TypeScript's JS API, which
  // TypeScript 7 no longer has; ours has none to rewrite (tsx reads tsconfig.json as it is).
  tsconfigFile: 'no-tsconfig-rewrite.json',
  // A narrowed run works in a folder of its own, so two areas can be mutated at once.
  tempDirName: process.env.STRYKER_REPORT ? `.stryker-tmp-${process.env.STRYKER_REPORT}` : '.stryker-tmp',
  cleanTempDir: true,
  // What the sandbox needs: sources, tests, contracts' artifacts; not builds, logs or reports.
  ignorePatterns: ['dist', '.tap', 'bench/out', 'bench/mutation', '.bruno', 'reports', '.scratch*', '*.log', '.stryker-tmp*'],
}
