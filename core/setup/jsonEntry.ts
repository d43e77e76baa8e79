import { readFile } from 'node:fs/promises'
import { holdsEntry, isPlainObject, writeWhole, type EntryOutcome } from './outcome.ts'

/**
 * Puts `entry` under `container.name` in a JSON config file, keeping everything else in it (and
 * its indentation). Writes nothing when the entry is already there, leaves a differing entry
 * alone unless `force`, and never rewrites a file that is not plain JSON (comments, trailing
 * commas): it returns the entry to add by hand instead, since rewriting would drop the comments.
 *
 * @example
 * await putJsonEntry('.mcp.json', 'mcpServers', 'bruno', { type: 'http', url }, false) // { status: 'added' }
 */
export async function putJsonEntry(path: string, container: string, name: string, entry: Record<string, string>, force: boolean): Promise<EntryOutcome> {
  const snippet = `${JSON.stringify({ [container]: { [name]: entry } }, null, 2)}\n`
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
    await writeWhole(path, snippet)
    return { status: 'created' }
  }
  let document: unknown
  try {
    document = text.trim() === '' ? {} : JSON.parse(text)
  } catch {
    return { status: 'manual', reason: 'not plain JSON (comments or trailing commas?), so it is not rewritten', snippet }
  }
  if (!isPlainObject(document)) return { status: 'manual', reason: 'its top level is not a JSON object', snippet }
  const servers = document[container] ?? {}
  if (!isPlainObject(servers)) return { status: 'manual', reason: `its "${container}" is not an object`, snippet }
  const existing = servers[name]
  if (holdsEntry(existing, entry)) return { status: 'unchanged' }
  if (existing !== undefined && !force) return { status: 'differs', reason: `a different "${name}" entry is there; --force replaces it`, snippet }
  const updated = { ...document, [container]: { ...servers, [name]: entry } }
  await writeWhole(path, `${JSON.stringify(updated, null, indentOf(text))}${text.endsWith('\n') || text.trim() === '' ? '\n' : ''}`)
  return { status: existing === undefined ? 'added' : 'replaced' }
}

/** The file's own indentation (its first indented line), two spaces for a file with none. */
function indentOf(text: string): string {
  return /^([ \t]+)\S/m.exec(text)?.[1] ?? '  '
}
