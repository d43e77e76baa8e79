// Reads StrykerJS's JSON reports (reports/mutation/*.json, or the files named) and prints, as
// Markdown, the score per file and per report, then every mutant that survived or had no coverage
// with its place and replacement: the table and the list bench/MUTATION.md keeps.
//
//   npx tsx bench/mutationScore.ts                       # every report in reports/mutation/
//   npx tsx bench/mutationScore.ts reports/mutation/runner.json
//
// Score = (killed + timeout) / (all but compile and runtime errors, ignored ones excluded), with
// no-coverage counted as survived, as the issue asks. Where one file appears in several reports
// the latest report (by modification time) counts.
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'

interface Mutant {
  readonly id: string
  readonly mutatorName: string
  readonly replacement?: string
  readonly status: 'Killed' | 'Survived' | 'NoCoverage' | 'Timeout' | 'CompileError' | 'RuntimeError' | 'Ignored' | 'Pending'
  readonly location: { readonly start: { readonly line: number; readonly column: number } }
}

interface Report {
  readonly files: Record<string, { readonly source: string; readonly mutants: readonly Mutant[] }>
}

const named = process.argv.slice(2)
const paths = named.length > 0 ? named : readdirSync('reports/mutation').filter((name) => name.endsWith('.json')).map((name) => join('reports/mutation', name))
const byFile = new Map<string, { report: string; at: number; source: string; mutants: readonly Mutant[] }>()
for (const path of paths) {
  const at = statSync(path).mtimeMs
  const report = JSON.parse(readFileSync(path, 'utf8')) as Report
  for (const [file, { source, mutants }] of Object.entries(report.files)) {
    const known = byFile.get(file)
    if (!known || known.at < at) byFile.set(file, { report: path, at, source, mutants })
  }
}

const counted = (mutants: readonly Mutant[]) => {
  const count = (status: Mutant['status']) => mutants.filter((mutant) => mutant.status === status).length
  const killed = count('Killed')
  const timeout = count('Timeout')
  const survived = count('Survived')
  const noCoverage = count('NoCoverage')
  const valid = killed + timeout + survived + noCoverage
  return { valid, killed, timeout, survived, noCoverage, score: valid === 0 ? 100 : (100 * (killed + timeout)) / valid }
}
const row = (name: string, mutants: readonly Mutant[]) => {
  const { valid, killed, timeout, survived, noCoverage, score } = counted(mutants)
  return `| ${name} | ${valid} | ${killed} | ${timeout} | ${survived} | ${noCoverage} | ${score.toFixed(1)} % |`
}

const files = [...byFile.keys()].sort()
console.log('| file | mutants | killed | timeout | survived | no coverage | score |')
console.log('|---|---|---|---|---|---|---|')
for (const file of files) console.log(row(file, byFile.get(file)!.mutants))
console.log(row('**all**', files.flatMap((file) => byFile.get(file)!.mutants)))
console.log('\n### Survived or not covered\n')
for (const file of files) {
  const { source, mutants } = byFile.get(file)!
  const lines = source.split('\n')
  for (const mutant of mutants.filter((each) => each.status === 'Survived' || each.status === 'NoCoverage')) {
    const { line } = mutant.location.start
    const replacement = (mutant.replacement ?? '').replace(/\s+/g, ' ').slice(0, 80)
    const code = (lines[line - 1] ?? '').trim().slice(0, 100)
    console.log(`- \`${file}:${line}\` ${mutant.mutatorName}${mutant.status === 'NoCoverage' ? ' (no coverage)' : ''}: \`${code}\` → \`${replacement}\``)
  }
}
