import t from 'tap'
import { MAX_JSON_DEPTH } from '../core/http/boundedJson.ts'
import { offlineConfig, startBruno } from './fixtures/bruno.ts'
import { modernHeaders, modernMeta, postRaw } from './fixtures/mcpHttp.ts'

// Every request is bounded before work: nesting depth, __proto__ keys, and a per-client rate
// limit (body size is in mcp-http.test.ts; lengths and counts are in the schemas, fuzzed in fuzz.test.ts).

const listBody = (extra: unknown) => ({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: modernMeta(), extra } })

t.test('a body nested deeper than the limit is refused before it is parsed', async (t) => {
  const env = { ...process.env }
  const bruno = await startBruno(t, offlineConfig(env), env)
  const nested = (depth: number) => JSON.parse('['.repeat(depth) + ']'.repeat(depth))
  // The envelope itself takes 2 levels ({ …, params: { extra: … } }).
  const fits = await postRaw(bruno.mcpUrl, listBody(nested(MAX_JSON_DEPTH - 2)), modernHeaders('tools/list'))
  t.equal(fits.status, 200, `${MAX_JSON_DEPTH} levels in all are fine`)
  const deep = await postRaw(bruno.mcpUrl, listBody(nested(MAX_JSON_DEPTH - 1)), modernHeaders('tools/list'))
  t.equal(deep.status, 400, 'one more is not')
  t.same(deep.json, { jsonrpc: '2.0', error: { code: -32600, message: `Invalid Request: the body nests deeper than ${MAX_JSON_DEPTH} levels` } })

  const inString = await postRaw(bruno.mcpUrl, listBody('['.repeat(500)), modernHeaders('tools/list'))
  t.equal(inString.status, 200, 'brackets inside strings do not count')

  const proto = await postRaw(bruno.mcpUrl, '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"__proto__":{"polluted":true}}}', modernHeaders('tools/list'))
  t.equal(proto.status, 400)
  t.equal(proto.json.error.code, -32600)
  t.equal(({} as Record<string, unknown>).polluted, undefined)

  const rest = await fetch(`${bruno.server.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '' })
  t.equal(rest.status, 400, 'an empty body')
  t.equal((await rest.json()).error.code, -32700)
})

t.test('a client over its rate limit gets 429 with a JSON-RPC error; probes are never limited', async (t) => {
  const env = { ...process.env }
  const bruno = await startBruno(t, offlineConfig(env, { server: { host: '127.0.0.1', port: 0, rateLimit: { max: 3, windowMs: 60_000 } } }), env)
  const statuses: number[] = []
  for (let i = 0; i < 5; i++) statuses.push((await postRaw(bruno.mcpUrl, listBody(0), modernHeaders('tools/list'))).status)
  t.same(statuses, [200, 200, 200, 429, 429])
  const limited = await postRaw(bruno.mcpUrl, listBody(0), modernHeaders('tools/list'))
  t.equal(limited.json.jsonrpc, '2.0')
  t.equal(limited.json.error.code, -32600)
  t.match(limited.json.error.message, /Too many requests: at most 3 per/)
  t.ok(Number(limited.headers.get('retry-after')) > 0, 'Retry-After says when to come back')
  t.equal((await fetch(`${bruno.server.url}/healthz`)).status, 200, 'healthz still answers')
})

t.test('/rpc and /mcp give one answer to a body refused before it is parsed: 400, -32600, the same words', async (t) => {
  const env = { ...process.env }
  // /rpc is served with the bruno group; no chain is dialled for a body refused unread.
  const bruno = await startBruno(t, offlineConfig(env, { groups: ['bruno', 'erc20'] }), env)
  const deep = '['.repeat(MAX_JSON_DEPTH + 1) + ']'.repeat(MAX_JSON_DEPTH + 1)
  const proto = '{"jsonrpc":"2.0","id":1,"method":"bruno_getStatus","params":{"__proto__":{"polluted":true}}}'
  for (const [body, message] of [
    [deep, `Invalid Request: the body nests deeper than ${MAX_JSON_DEPTH} levels`],
    [proto, 'Invalid Request: "__proto__" keys are not accepted'],
  ] as const) {
    const rpc = await postRaw(`${bruno.server.url}/rpc`, body)
    t.equal(rpc.status, 400, `/rpc: ${message}`)
    t.same(rpc.json, { jsonrpc: '2.0', id: null, error: { code: -32600, message, data: { code: 'invalid_request' } } })
    const mcp = await postRaw(bruno.mcpUrl, body, modernHeaders('tools/list'))
    t.equal(mcp.status, 400, `/mcp: ${message}`)
    t.same(mcp.json, { jsonrpc: '2.0', error: { code: -32600, message } })
  }
})
