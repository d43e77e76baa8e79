/** How deep a request body may nest: Bruno's own shapes nest 6 levels; 64 leaves room and bounds the parse. */
export const MAX_JSON_DEPTH = 64

/** A body refused before it is parsed: nested too deep, or naming `__proto__`. */
export class UnsafeJsonError extends Error {
  override readonly name = 'UnsafeJsonError'
  readonly statusCode = 400
  readonly code = 'BRUNO_UNSAFE_JSON'
}

/** A body that is not JSON at all. */
export class JsonSyntaxError extends Error {
  override readonly name = 'JsonSyntaxError'
  readonly statusCode = 400
  readonly code = 'BRUNO_JSON_SYNTAX'
}

/**
 * Parses JSON after a linear scan that refuses nesting deeper than `maxDepth` (brackets inside
 * strings do not count), so a hostile body costs one pass over its bytes, never a deep parse.
 *
 * @example
 * parseBoundedJson('{"a":[1,2]}') // { a: [1, 2] }
 * parseBoundedJson('['.repeat(100) + ']'.repeat(100)) // throws UnsafeJsonError
 */
export function parseBoundedJson(text: string, maxDepth: number = MAX_JSON_DEPTH): unknown {
  let depth = 0
  for (let index = 0; index < text.length; index++) {
    const char = text.charCodeAt(index)
    if (char === QUOTE) index = closingQuote(text, index)
    else if (char === OPEN_BRACE || char === OPEN_BRACKET) {
      if (++depth > maxDepth) throw new UnsafeJsonError(`Invalid Request: the body nests deeper than ${maxDepth} levels`)
    } else if (char === CLOSE_BRACE || char === CLOSE_BRACKET) depth--
  }
  // A "__proto__" key is harmless to JSON.parse but a trap for any later object merge.
  if (text.includes('"__proto__"')) throw new UnsafeJsonError('Invalid Request: "__proto__" keys are not accepted')
  try {
    return JSON.parse(text)
  } catch {
    throw new JsonSyntaxError('Parse error: the body is not valid JSON')
  }
}

const QUOTE = 0x22
const BACKSLASH = 0x5c
const OPEN_BRACE = 0x7b
const CLOSE_BRACE = 0x7d
const OPEN_BRACKET = 0x5b
const CLOSE_BRACKET = 0x5d

/**
 * Where the string opened at `open` ends (`text.length` if it does not): the next quote preceded
 * by an even run of backslashes. Strings are most of a body's bytes; indexOf crosses them faster
 * than a loop over each character.
 */
function closingQuote(text: string, open: number): number {
  for (let quote = text.indexOf('"', open + 1); quote !== -1; quote = text.indexOf('"', quote + 1)) {
    let backslashes = 0
    while (text.charCodeAt(quote - 1 - backslashes) === BACKSLASH) backslashes++
    if (backslashes % 2 === 0) return quote
  }
  return text.length
}
