import type { ToolContext } from '../tool/tool.ts'
import { knownChain, type PageContext } from './context.ts'
import { VIEW_MIME_TYPE, viewHtml } from './pages.ts'

/** The review view: a prepare tool's result in words before signing (calibur_batch, metamask_batch, payment_authorization, transfer_authorization). */
export const REVIEW_VIEW = 'ui://bruno/review'
/** The status view: a submission's stage, live (submit, status). */
export const STATUS_VIEW = 'ui://bruno/status'

const VIEW_OF = { [REVIEW_VIEW]: 'review', [STATUS_VIEW]: 'status' } as const

/** A `ui://` resource a tool names in `_meta.ui.resourceUri`, read on the paths that serve such a tool. */
export interface ViewResource {
  readonly uri: string
  readonly mimeType: typeof VIEW_MIME_TYPE
  readonly read: (context: ToolContext) => Promise<string>
}

/**
 * The view at `uri`, or `undefined` for a URI that is none of Bruno's views (the registry refuses
 * a tool naming one).
 *
 * @example
 * viewResource('ui://bruno/review')?.mimeType // 'text/html;profile=mcp-app'
 */
export function viewResource(uri: string): ViewResource | undefined {
  const view = VIEW_OF[uri as keyof typeof VIEW_OF]
  if (!view) return undefined
  return { uri, mimeType: VIEW_MIME_TYPE, read: async (context) => viewHtml(view, pageContextOf(context)) }
}

/**
 * What a view or the signing page is served with: every network's known contracts, and the
 * signing page's address on the origin the request reached Bruno at.
 */
export function pageContextOf(context: ToolContext): PageContext {
  const chains = context.networks.names.map((name) => knownChain(context.networks.get(name).config, context.relay.delegates(name)))
  return { chains, signPage: `${context.origin ?? ''}/sign`, mcpPath: '/mcp' }
}
