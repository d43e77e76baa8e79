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

interface Position {
  readonly line: number
  readonly column: number
}

interface Mutant {
  readonly id: string
  readonly mutatorName: string
  readonly replacement?: string
  readonly status: 'Killed' | 'Survived' | 'NoCoverage' | 'Timeout' | 'CompileError' | 'RuntimeError' | 'Ignored' | 'Pending'
  readonly location: { readonly start: Position; readonly end: Position }
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
  // Positions are 1-based lines and columns: the mutated span, not its whole line.
  const offset = ({ line, column }: Position) => lines.slice(0, line - 1).reduce((sum, text) => sum + text.length + 1, 0) + column - 1
  const short = (text: string) => text.replace(/\s+/g, ' ').slice(0, 100)
  for (const mutant of mutants.filter((each) => each.status === 'Survived' || each.status === 'NoCoverage')) {
    const { start, end } = mutant.location
    const original = short(source.slice(offset(start), offset(end)))
    console.log(`- \`${file}:${start.line}\` ${mutant.mutatorName}${mutant.status === 'NoCoverage' ? ' (no coverage)' : ''}: \`${original}\` → \`${short(mutant.replacement ?? '')}\``)
  }
}
