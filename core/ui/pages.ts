import { STYLE } from './style.ts'
import { browserBundle } from './bundle.ts'
import type { PageContext } from './context.ts'

/** MCP Apps' resource type for a view (the `io.modelcontextprotocol/ui` extension). */
export const VIEW_MIME_TYPE = 'text/html;profile=mcp-app'

/**
 * The signing page's Content-Security-Policy: its own script and Bruno's endpoint only, nothing
 * from a third party, no inline script, no frames, no forms, and never framed by another site.
 */
export const SIGN_PAGE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

/**
 * JSON inside an HTML `<script type="application/json">`: `<`, `>`, `&` and the two line
 * separators escaped, so no configured text (a token symbol) can close the element.
 */
function embeddedJson(value: unknown): string {
  return JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`)
}

function document(title: string, context: object, script: string): string {
  return (
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">' +
    `<title>${title}</title><style>${STYLE}</style>` +
    `<script type="application/json" id="bruno-context">${embeddedJson(context)}</script></head>` +
    `<body><main id="root"><p class="note">Loading…</p></main>${script}</body></html>`
  )
}

/** The views' script as it is written inline, once per process: a `</script` in it would end the element early. */
let inlineView: Promise<string> | undefined
const inline = (script: string) => script.replace(/<\/script/gi, '<\\/script')

/**
 * A view's HTML (MCP Apps: one document, its script inline, rendered by the host in a sandboxed
 * frame whose CSP the host sets): the view's bundle and the deployment's known contracts.
 *
 * @example
 * await viewHtml('review', context) // '<!doctype html>…'
 */
export async function viewHtml(view: 'review' | 'status', context: PageContext): Promise<string> {
  const script = await (inlineView ??= browserBundle('view').then(inline))
  return document(view === 'review' ? 'Review — Bruno' : 'Status — Bruno', { ...context, view }, `<script type="module">${script}</script>`)
}

/** The signing page: its script is `/sign/page.js`, so its CSP needs no inline script. */
export function signPageHtml(context: PageContext): string {
  return document('Sign — Bruno', context, '<script type="module" src="/sign/page.js"></script>')
}
