import t from 'tap'
import { createLogger } from '../../core/logger.ts'
import { urlSecrets } from '../../core/secrets.ts'

// core/logger.ts's scrubber on the lines pino writes: a secret is redacted in any letter case (a URL's host,
// a hex key, a percent-escape may come back upper- or lower-cased), with the characters a URL holds that
// mean something in a pattern, and whole when one secret holds another. Issue 28, point 9.

function logged(secrets: readonly string[]) {
  const lines: string[] = []
  const log = createLogger({ secrets, destination: { write: (line: string) => lines.push(line) } })
  return { log, lines }
}

const url = 'https://Eth-Mainnet.example.com/v2/AbCdEf0123456789?key=a+b(c)*'
const key = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d'
const keyDigits = key.slice(2)

t.test('a secret in any letter case is redacted, wherever it sits in the line', async (t) => {
  const { log, lines } = logged([url, key, keyDigits])
  log.info({ endpoint: url.toUpperCase() }, `failed at ${url.toLowerCase()}`)
  log.warn({ err: new Error(`signer 0X${keyDigits.toUpperCase()} refused`) }, 'mixed: ' + key.replace(/[a-f]/g, (c) => c.toUpperCase()))
  log.error(`as written: ${url} and ${key}`)
  t.equal(lines.length, 3)
  for (const line of lines) {
    const folded = line.toLowerCase()
    t.notOk(folded.includes(url.toLowerCase()) || folded.includes(keyDigits), `no secret in any case: ${line}`)
    t.match(line, /\[redacted\]/)
  }
  t.match(lines[0], /"endpoint":"\[redacted\]"/)
  t.match(lines[0], /"msg":"failed at \[redacted\]"/)
  t.match(lines[2], /"msg":"as written: \[redacted\] and \[redacted\]"/, 'the key whole, not its digits after "0x"')
})

t.test('one secret inside another: the longer is redacted whole; short values are not secrets', async (t) => {
  const inner = 'AbCdEf0123456789'
  const { log, lines } = logged([inner, url, 'short'])
  log.info(`url ${url.toUpperCase()} / inner ${inner} / a short word`)
  t.match(lines[0], /"msg":"url \[redacted\] \/ inner \[redacted\] \/ a short word"/)
})

t.test('no secrets: lines as pino writes them', async (t) => {
  const { log, lines } = logged([])
  log.info('plain')
  t.match(lines[0], /"msg":"plain"/)
})

t.test('urlSecrets: an RPC URL and the parts a node may quote alone; a path word is not a key', async (t) => {
  const parts = urlSecrets('https://user:pa55w%40rd@eth.example.com/optimism/AbCdEf0123456789?apikey=QueryKey987&chain=base')
  for (const part of ['https://user:pa55w%40rd@eth.example.com/optimism/AbCdEf0123456789?apikey=QueryKey987&chain=base', 'user:pa55w%40rd@eth.example.com/optimism/AbCdEf0123456789?apikey=QueryKey987&chain=base', 'eth.example.com/optimism/AbCdEf0123456789', 'pa55w%40rd', 'pa55w@rd', 'AbCdEf0123456789', 'QueryKey987']) {
    t.ok(parts.includes(part), part)
  }
  t.notOk(parts.includes('optimism'), 'an ordinary word in the path stays')
  t.notOk(parts.includes('base'), 'and in the query')
  t.notOk(parts.includes('eth.example.com'), 'the host alone stays')
  t.same(urlSecrets('not a url'), ['not a url'])
  t.same(urlSecrets(undefined), [])
})
