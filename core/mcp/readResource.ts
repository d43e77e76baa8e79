import type { RegistryView } from '../registry.ts'
import type { CacheHint } from '../tool/resource.ts'
import type { ToolContext } from '../tool/tool.ts'
import { ErrorCode, JsonRpcError } from '../http/jsonrpc.ts'

/** A `ReadResourceResult`'s one content, and the caching hint the modern era publishes with it. */
export interface ResourceRead {
  readonly contents: readonly [{ uri: string; mimeType: string; text: string }]
  readonly cache: CacheHint
}

const VIEW_CACHE: CacheHint = { ttlMs: 3_600_000, scope: 'private' }

/** Resource not found in 2025-11-25 and earlier; 2026-07-28 replaced it with -32602. */
const LEGACY_RESOURCE_NOT_FOUND = -32002

/**
 * `resources/read`: a fixed resource by its URI, else the first template that matches it. A URI
 * that names nothing on this path is `Resource not found` with `data.uri`: `-32602` in the modern
 * era, `-32002` in the legacy one (each era's own code).
 *
 * @example
 * await readResource(view, { uri: 'bruno://spec' }, context, 'modern')
 * // { contents: [{ uri: 'bruno://spec', mimeType: 'text/markdown', text: '# Bruno …' }], cache: { ttlMs: 86400000, scope: 'public' } }
 */
export async function readResource(view: RegistryView, params: Record<string, unknown>, context: ToolContext, era: 'modern' | 'legacy'): Promise<ResourceRead> {
  const { uri } = params
  if (typeof uri !== 'string') throw new JsonRpcError(ErrorCode.InvalidParams, 'Invalid params: "uri" must be a string', 200)
  const resource = view.resources.get(uri)
  if (resource) return { contents: [{ uri, mimeType: resource.mimeType, text: await resource.read(context) }], cache: resource.cache }
  const shown = view.views.get(uri)
  // A view embeds the origin the request came by: one caller's.
  if (shown) return { contents: [{ uri, mimeType: shown.mimeType, text: await shown.read(context) }], cache: VIEW_CACHE }
  for (const template of view.templates) {
    const variables = template.match(uri)
    if (!variables) continue
    const text = await template.definition.read(variables, context)
    if (text !== undefined) return { contents: [{ uri, mimeType: template.definition.mimeType, text }], cache: template.definition.cache }
  }
  throw new JsonRpcError(era === 'modern' ? ErrorCode.InvalidParams : LEGACY_RESOURCE_NOT_FOUND, 'Resource not found', 200, { uri })
}
