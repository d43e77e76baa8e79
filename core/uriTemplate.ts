const VARIABLE = /\{([A-Za-z0-9_]+)\}/g

/**
 * A matcher for an RFC 6570 level-1 URI template whose variables each stand for one path segment
 * (no `/`, `?` or `#`): the variables, percent-decoded, or `undefined` when the URI does not match.
 * Throws at build time for a template with no variable or a repeated one.
 *
 * @example
 * const match = uriTemplateMatcher('bruno://{chain}/submissions/{id}')
 * match('bruno://base/submissions/7f3a') // { chain: 'base', id: '7f3a' }
 * match('bruno://base/config')           // undefined
 */
export function uriTemplateMatcher(template: string): (uri: string) => Record<string, string> | undefined {
  const names = [...template.matchAll(VARIABLE)].map((match) => match[1]!)
  if (names.length === 0) throw new Error(`URI template "${template}" has no variable`)
  if (new Set(names).size !== names.length) throw new Error(`URI template "${template}" repeats a variable`)
  const literals = template.split(VARIABLE).filter((_, index) => index % 2 === 0)
  const pattern = new RegExp(`^${literals.map(escapeRegExp).join('([^/?#]+)')}$`)
  return (uri) => {
    const match = pattern.exec(uri)
    if (!match) return undefined
    const variables: Record<string, string> = {}
    try {
      names.forEach((name, index) => (variables[name] = decodeURIComponent(match[index + 1]!)))
    } catch {
      return undefined // a malformed percent-escape names nothing
    }
    return variables
  }
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}
