import { readFile } from 'node:fs/promises'
import type { ResourceDefinition } from '../../../core/plugin.ts'

/** SPEC.md, the relay's client contract, at the package's root (the built package runs from dist/). */
const SPEC_FILE = new URL(import.meta.url.endsWith('.ts') ? '../../../SPEC.md' : '../../../../SPEC.md', import.meta.url)

/**
 * `bruno://spec`: the client contract (SPEC.md), read once at start so a deployment serves the
 * contract it was built with; a missing file stops the start.
 *
 * @example
 * const spec = await specResource()
 * spec.mimeType // 'text/markdown'
 */
export async function specResource(): Promise<ResourceDefinition> {
  const text = await readFile(SPEC_FILE, 'utf8')
  return {
    uri: 'bruno://spec',
    name: 'spec',
    title: 'Bruno — the contract',
    description: 'The relay\'s client contract (SPEC.md): the MCP binding, every tool\'s inputs, outputs and errors, the REST and JSON-RPC bindings.',
    mimeType: 'text/markdown',
    cache: { ttlMs: 86_400_000, scope: 'public' },
    read: async () => text,
  }
}
