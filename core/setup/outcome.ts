import { mkdir, rename, writeFile } from 'node:fs/promises'
import { dirname } from 'node:path'

/**
 * What `bruno setup` did to one file:
 * - `created`: the file did not exist; it now holds only the entry;
 * - `added`: the entry was added, everything else in the file kept;
 * - `unchanged`: the entry was already there; nothing was written;
 * - `replaced`: a differing entry was replaced (`--force`);
 * - `differs`: a differing entry is there and was left alone;
 * - `manual`: the file cannot be edited safely (commented JSON, an unusual layout): nothing was
 *   written, and `snippet` is the entry to add by hand.
 */
export type EntryStatus = 'created' | 'added' | 'unchanged' | 'replaced' | 'differs' | 'manual'

export interface EntryOutcome {
  readonly status: EntryStatus
  /** Why the file was left as it was (`differs`, `manual`). */
  readonly reason?: string
  /** The entry in the file's own format, for the person to add (`differs`, `manual`). */
  readonly snippet?: string
}

/** Whether `existing` holds every field of `entry` with the same value (extra fields, e.g. headers, are the user's). */
export function holdsEntry(existing: unknown, entry: Record<string, string>): boolean {
  return isPlainObject(existing) && Object.entries(entry).every(([key, value]) => existing[key] === value)
}

/** A JSON object or TOML table (not an array, not null): what holds servers by name. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** Writes through a temporary file and a rename, so an agent never reads a half-written config. */
export async function writeWhole(path: string, text: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true })
  const temporary = `${path}.bruno-${process.pid}.tmp`
  await writeFile(temporary, text)
  await rename(temporary, path)
}
