/** What stands for a secret wherever one was found. */
export const REDACTED = '[redacted]'

/**
 * A function that replaces every secret in a text with `[redacted]`, in any letter case (a URL's
 * host, a hex key or a percent-escape may come back upper- or lower-cased), the longest first so
 * that a secret holding another goes whole. Values under 8 characters are not secrets here: they
 * would match ordinary words. A text holding none is returned as it is, without a copy.
 *
 * @example
 * const redact = secretRedactor(['https://rpc.example/v2/AbCdEf012345'])
 * redact('failed at HTTPS://RPC.EXAMPLE/V2/ABCDEF012345') // 'failed at [redacted]'
 */
export function secretRedactor(secrets: readonly string[]): (text: string) => string {
  const kept = [...new Set(secrets.filter((secret) => secret.length >= 8))].sort((a, b) => b.length - a.length)
  if (kept.length === 0) return (text) => text
  const pattern = new RegExp(kept.map((secret) => secret.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'), 'gi')
  return (text) => {
    pattern.lastIndex = 0
    return pattern.test(text) ? text.replace(pattern, REDACTED) : text
  }
}
