/**
 * The known word nearest a mistyped one, when it is near enough to be the one meant: at most a
 * third of its letters apart (and at least 2 edits allowed), case ignored. Edits are insertions,
 * deletions, substitutions and swaps of two neighbours (Damerau–Levenshtein, optimal string alignment).
 *
 * @example
 * nearest('contarct', ['contract', 'key', 'pollMs']) // 'contract'
 * nearest('xyz', ['contract', 'key'])                // undefined
 */
export function nearest(word: string, known: readonly string[]): string | undefined {
  let best: { candidate: string; distance: number } | undefined
  for (const candidate of known) {
    const distance = editDistance(word.toLowerCase(), candidate.toLowerCase())
    if (!best || distance < best.distance) best = { candidate, distance }
  }
  if (!best) return undefined
  return best.distance <= Math.max(2, Math.floor(word.length / 3)) ? best.candidate : undefined
}

/**
 * "did you mean …?" for a mistyped word, or the list of known ones when none is near.
 *
 * @example
 * suggestion('erc2', ['bruno', 'erc20']) // 'did you mean "erc20"?'
 */
export function suggestion(word: string, known: readonly string[], noun = 'known'): string {
  const near = nearest(word, known)
  return near ? `did you mean "${near}"?` : `${noun}: ${known.map((name) => `"${name}"`).join(', ')}`
}

function editDistance(a: string, b: string): number {
  const rows = a.length + 1
  const columns = b.length + 1
  const d: number[][] = Array.from({ length: rows }, (_, i) => Array.from({ length: columns }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)))
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < columns; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1)
    }
  }
  return d[rows - 1]![columns - 1]!
}
