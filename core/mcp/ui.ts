import { VIEW_MIME_TYPE } from '../ui/pages.ts'
import { META } from './protocol.ts'

/** MCP Apps' identifier, in client and server capabilities' `extensions`. */
export const UI_EXTENSION = 'io.modelcontextprotocol/ui'

/**
 * Whether a modern request declares MCP Apps in its own `clientCapabilities` (a host that shows
 * `ui://` views): `{mimeTypes: [...]}` naming `text/html;profile=mcp-app`, or an empty object.
 *
 * @example
 * declaresUi({ _meta: { 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/ui': { mimeTypes: ['text/html;profile=mcp-app'] } } } } }) // true
 */
export function declaresUi(params: Record<string, unknown>): boolean {
  const capabilities = (params._meta as Record<string, unknown> | undefined)?.[META.clientCapabilities] as { extensions?: unknown } | undefined
  const extensions = capabilities?.extensions
  if (typeof extensions !== 'object' || extensions === null) return false
  const ui = (extensions as Record<string, unknown>)[UI_EXTENSION] as { mimeTypes?: unknown } | undefined
  if (typeof ui !== 'object' || ui === null) return false
  return !Array.isArray(ui.mimeTypes) || ui.mimeTypes.includes(VIEW_MIME_TYPE)
}
