/**
 * Where a text stops being JSON, and why: the first offending character's line and column (both
 * from 1) and what was expected there. Node's own `JSON.parse` messages differ between versions,
 * do not always give a position, and quote the text around the error; this names no more of the
 * file than the one character found.
 *
 * @example
 * jsonSyntaxError('{\n  "port": 3030,\n}') // { line: 3, column: 1, reason: 'a trailing comma before "}" (JSON allows none)' }
 * jsonSyntaxError('{"port": 3030}')       // undefined: it is JSON
 */
export function jsonSyntaxError(text: string): { line: number; column: number; reason: string } | undefined {
  const failure = scan(text)
  if (!failure) return undefined
  const before = text.slice(0, failure.at)
  const line = before.split('\n').length
  const column = failure.at - (before.lastIndexOf('\n') + 1) + 1
  return { line, column, reason: failure.reason }
}

class Stop {
  constructor(
    readonly at: number,
    readonly reason: string,
  ) {}
}

function scan(text: string): Stop | undefined {
  let at = 0
  const fail = (reason: string, where = at): never => {
    throw new Stop(where, reason)
  }
  const found = () => (at >= text.length ? 'the end of the file' : describe(text[at]!))
  const space = () => {
    while (at < text.length && ' \t\n\r'.includes(text[at]!)) at++
  }
  const literal = (word: string) => {
    if (text.startsWith(word, at)) at += word.length
    else fail(`expected a value, found ${found()}${/^[A-Za-z]/.test(text[at] ?? '') ? ' (strings need double quotes)' : ''}`)
  }
  const string = () => {
    if (text[at] !== '"') fail(`expected a double-quoted key, found ${found()}${text[at] === "'" ? ' (JSON strings take double quotes)' : ''}`)
    at++
    for (;;) {
      if (at >= text.length) fail('a string is not closed (no ending ")')
      const char = text[at]!
      if (char === '"') {
        at++
        return
      }
      if (char < ' ') fail(char === '\n' ? 'a string runs past the end of its line (no ending ")' : 'a control character inside a string (escape it)')
      if (char === '\\') {
        const escape = text[at + 1]
        if (escape === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(at + 2, at + 6))) fail('"\\u" must be followed by four hex digits')
          at += 6
        } else if (escape !== undefined && '"\\/bfnrt'.includes(escape)) at += 2
        else fail(`an invalid escape "\\${escape ?? ''}" in a string`)
      } else at++
    }
  }
  const number = () => {
    const start = at
    const match = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(at))
    if (!match) fail(`expected a value, found ${found()}`)
    at += match![0].length
    if (/^[0-9A-Za-z.+-]/.test(text[at] ?? '')) fail('a malformed number (JSON numbers have no leading zeros, a digit after "." and no hex)', start)
  }
  const value = (): void => {
    space()
    const char = text[at]
    if (char === '{') return object()
    if (char === '[') return array()
    if (char === '"') return string()
    if (char === 't') return literal('true')
    if (char === 'f') return literal('false')
    if (char === 'n') return literal('null')
    if (char === '-' || (char !== undefined && char >= '0' && char <= '9')) return number()
    fail(`expected a value, found ${found()}${char === "'" ? ' (JSON strings take double quotes)' : ''}`)
  }
  const object = () => {
    at++
    space()
    if (text[at] === '}') {
      at++
      return
    }
    for (;;) {
      space()
      if (text[at] === '}') fail('a trailing comma before "}" (JSON allows none)', lastComma)
      string()
      space()
      if (text[at] !== ':') fail(`expected ":" after a key, found ${found()}`)
      at++
      value()
      space()
      if (text[at] === ',') {
        lastComma = at
        at++
        continue
      }
      if (text[at] === '}') {
        at++
        return
      }
      fail(`expected "," or "}" after a value, found ${found()}`)
    }
  }
  const array = () => {
    at++
    space()
    if (text[at] === ']') {
      at++
      return
    }
    for (;;) {
      space()
      if (text[at] === ']') fail('a trailing comma before "]" (JSON allows none)', lastComma)
      value()
      space()
      if (text[at] === ',') {
        lastComma = at
        at++
        continue
      }
      if (text[at] === ']') {
        at++
        return
      }
      fail(`expected "," or "]" after a value, found ${found()}`)
    }
  }
  let lastComma = 0
  try {
    value()
    space()
    if (at < text.length) fail(`more after the end of the JSON value: ${found()}`)
    return undefined
  } catch (error) {
    if (error instanceof Stop) return error
    throw error
  }
}

function describe(char: string): string {
  if (char === '\n' || char === '\r') return 'the end of the line'
  if (char === '\t' || char === ' ') return 'a space'
  return char >= ' ' && char !== '\u007f' ? `"${char}"` : `character U+${char.codePointAt(0)!.toString(16).padStart(4, '0')}`
}
