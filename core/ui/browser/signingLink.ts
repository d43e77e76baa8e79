import type { ReviewedTool } from '../review.ts'

/** What a signing link carries in its fragment: the tool and its result, as the review saw them. */
export interface SigningLink {
  readonly tool: string
  readonly result: unknown
}

/**
 * A signing link's fragment: `v1.` and the base64url of `{tool, result}` as JSON (UTF-8). The
 * fragment never reaches Bruno's server in a request: the page reads it in the browser.
 */
export function encodeSigningLink(tool: ReviewedTool, result: unknown): string {
  const bytes = new TextEncoder().encode(JSON.stringify({ tool, result }))
  let binary = ''
  for (const byte of bytes) binary += String.fromCharCode(byte)
  return `v1.${btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')}`
}

/** A fragment back into `{tool, result}`, or a sentence saying why it cannot be read. */
export function decodeSigningLink(fragment: string): SigningLink | string {
  const text = fragment.replace(/^#/, '')
  if (!text.startsWith('v1.')) return 'this link carries no batch to sign (open it from the review in your assistant)'
  try {
    const binary = atob(text.slice(3).replace(/-/g, '+').replace(/_/g, '/'))
    const parsed = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(Uint8Array.from(binary, (char) => char.charCodeAt(0)))) as unknown
    if (typeof parsed !== 'object' || parsed === null || typeof (parsed as SigningLink).tool !== 'string') return 'this link is damaged: it has no tool'
    return parsed as SigningLink
  } catch {
    return 'this link is damaged: its batch cannot be read'
  }
}
