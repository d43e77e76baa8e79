import { readFile } from 'node:fs/promises'
import { parse, stringify } from 'smol-toml'
import { holdsEntry, isPlainObject, writeWhole, type EntryOutcome } from './outcome.ts'

/**
 * Puts `entry` as the table `[container.name]` in a TOML config file (Codex's `.codex/config.toml`).
 * The file is edited as text, so its comments and layout stay as they are: a new table is appended,
 * a replaced one (`--force`) is swapped in place. Every edit is checked by parsing the result: the
 * entry must read back as written and the rest of the document must be unchanged, else nothing is
 * written and the entry is returned to add by hand.
 *
 * @example
 * await putTomlEntry('.codex/config.toml', 'mcp_servers', 'bruno', { url }, false) // { status: 'added' }
 */
export async function putTomlEntry(path: string, container: string, name: string, entry: Record<string, string>, force: boolean): Promise<EntryOutcome> {
  const table = stringify({ [container]: { [name]: entry } })
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
    await writeWhole(path, table)
    return { status: 'created' }
  }
  let document: Record<string, unknown>
  try {
    document = parse(text)
  } catch {
    return { status: 'manual', reason: 'it is not valid TOML, so it is not edited', snippet: table }
  }
  const servers = document[container]
  const existing = isPlainObject(servers) ? servers[name] : undefined
  if (holdsEntry(existing, entry)) return { status: 'unchanged' }
  if (existing !== undefined && !force) return { status: 'differs', reason: `a different [${container}.${name}] is there; --force replaces it`, snippet: table }

  const edited = existing === undefined ? appendTable(text, table) : replaceTable(text, container, name, table)
  if (edited === undefined || !readsBack(edited, document, container, name, entry)) {
    return { status: 'manual', reason: `its [${container}] is not laid out as tables Bruno can edit safely`, snippet: table }
  }
  await writeWhole(path, edited)
  return { status: existing === undefined ? 'added' : 'replaced' }
}

function appendTable(text: string, table: string): string {
  if (text.trim() === '') return table
  return `${text}${text.endsWith('\n') ? '' : '\n'}\n${table}`
}

/** Swaps the `[container.name]` table and its subtables for `table`; `undefined` when it is not written as a table header. */
function replaceTable(text: string, container: string, name: string, table: string): string | undefined {
  const lines = text.split('\n')
  const key = new RegExp(`^\\s*\\[\\s*${container}\\s*\\.\\s*(?:${name}|"${name}")\\s*(?:\\]|\\.)`)
  const start = lines.findIndex((line) => key.test(line))
  if (start === -1) return undefined
  let end = start + 1
  while (end < lines.length && !(/^\s*\[/.test(lines[end]!) && !key.test(lines[end]!))) end++
  const replacement = table.endsWith('\n') ? table.slice(0, -1).split('\n') : table.split('\n')
  // Keep the blank line that separated the old table from what follows.
  const trailingBlank = end < lines.length && lines[end - 1]!.trim() === '' ? [''] : []
  return [...lines.slice(0, start), ...replacement, ...trailingBlank, ...lines.slice(end)].join('\n')
}

/** The edited text parses, holds exactly `entry` at `[container.name]`, and nothing else moved. */
function readsBack(edited: string, before: Record<string, unknown>, container: string, name: string, entry: Record<string, string>): boolean {
  let after: Record<string, unknown>
  try {
    after = parse(edited)
  } catch {
    return false
  }
  const without = (document: Record<string, unknown>) => {
    const servers = isPlainObject(document[container]) ? { ...document[container] } : {}
    delete servers[name]
    return JSON.stringify({ ...document, [container]: servers })
  }
  const servers = after[container]
  const written = isPlainObject(servers) ? servers[name] : undefined
  return JSON.stringify(written) === JSON.stringify(entry) && without(after) === without(before)
}
