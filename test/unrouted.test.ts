import { connect } from 'node:net'
import t from 'tap'
import { offlineConfig, startBruno } from './fixtures/bruno.ts'

// What no route handler reads (issue 50, point 7) is answered in Bruno's shape for the binding the
// path belongs to — REST `{"error": {code, message}}`, MCP's JSON-RPC error — never in Fastify's or
// Node's words, and never quoting the request. The relay bindings are served with the bruno group;
// no chain is dialled.

const env = { ...process.env }
const bruno = await startBruno(t, offlineConfig(env, { groups: ['bruno', 'erc20'] }), env)
const { port } = bruno.server.app.server.address() as { port: number }
const base = bruno.server.url

interface RawAnswer {
  status: number
  headers: string
  body: string
}

/** Sends `request` as bytes on a fresh connection and reads the first answer until the server closes. */
function sendRaw(request: string): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(request))
    let received = ''
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => (received += chunk))
    socket.on('error', reject)
    socket.on('close', () => {
      const [head = '', body = ''] = received.split('\r\n\r\n', 2)
      resolve({ status: Number(head.split(' ')[1]), headers: head.toLowerCase(), body })
    })
  })
}

const HOST = 'Host: 127.0.0.1\r\nConnection: close\r\n'
const LONG = 'a'.repeat(5_000)
const REST_NO_ROUTE = { error: { code: 'no_route', message: 'Not Found: nothing is served at this path with this method (SPEC.md §1 and §7 list the endpoints)' } }

t.test('a path or method no route serves: 404 no_route in REST; under /mcp, 404 with no body as an unknown group', async (t) => {
  for (const [method, path] of [['PUT', '/local/v1/quote'], ['GET', '/nope'], ['DELETE', '/local/v1/x402']] as const) {
    const response = await fetch(`${base}${path}`, { method })
    const text = await response.text()
    t.equal(response.status, 404, `${method} ${path}`)
    t.same(JSON.parse(text), REST_NO_ROUTE, 'REST shape, Bruno\'s words')
    t.notMatch(text, path, 'the path is not quoted')
  }
  const unreadable = await fetch(`${base}/local/v1/quote`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: '{x' })
  t.equal(unreadable.status, 400, 'a body sent to no route that is not JSON')
  t.same(await unreadable.json(), { error: { code: 'parse_error', message: 'the body is empty or not valid JSON' } })

  const mcp = await fetch(`${bruno.mcpUrl}/erc20/tools`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
  t.equal(mcp.status, 404, 'a path under /mcp that names no MCP server')
  t.equal(await mcp.text(), '', 'no MCP body, as an unknown group')
  const mcpUnreadable = await fetch(`${bruno.mcpUrl}/erc20/tools`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{x' })
  t.equal(mcpUnreadable.status, 400)
  t.same(await mcpUnreadable.json(), { jsonrpc: '2.0', error: { code: -32700, message: 'Parse error: the body is not valid JSON' } }, 'MCP\'s own parse error')
})

t.test('a path segment longer than maxParamLength: 414 in the binding\'s shape, the URL not echoed', async (t) => {
  for (const path of [`/local/v1/status/${LONG}`, `/${LONG}/v1/x402`]) {
    const response = await fetch(`${base}${path}`, { method: path.endsWith('x402') ? 'POST' : 'GET' })
    const text = await response.text()
    t.equal(response.status, 414, path.slice(0, 30))
    t.same(JSON.parse(text), { error: { code: 'uri_too_long', message: 'URI Too Long: a segment of the path is longer than any Bruno serves' } })
    t.notMatch(text, 'aaaaaaaaaa', 'the URL is not echoed')
  }
  const mcp = await fetch(`${bruno.mcpUrl}/${LONG}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
  const text = await mcp.text()
  t.equal(mcp.status, 414)
  t.same(JSON.parse(text), { jsonrpc: '2.0', error: { code: -32600, message: 'URI Too Long: a segment of the path is longer than any Bruno serves' } })
  t.notMatch(text, 'aaaaaaaaaa', 'the URL is not echoed')
})

t.test('a path that is not valid percent-encoding: 400 in the binding\'s shape', async (t) => {
  const rest = await sendRaw(`GET /local/v1/status/%zz-${LONG.slice(0, 50)} HTTP/1.1\r\n${HOST}\r\n`)
  t.equal(rest.status, 400)
  t.same(JSON.parse(rest.body), { error: { code: 'invalid_request', message: 'Bad Request: the path is not valid percent-encoding' } })
  t.notMatch(rest.body, '%zz', 'the path is not quoted')
  const mcp = await sendRaw(`POST /mcp/%zz HTTP/1.1\r\n${HOST}Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`)
  t.equal(mcp.status, 400)
  t.same(JSON.parse(mcp.body), { jsonrpc: '2.0', error: { code: -32600, message: 'Bad Request: the path is not valid percent-encoding' } })
})

t.test('headers over Node\'s limit (an x402 payment header): 431 headers_too_large, nothing echoed', async (t) => {
  const header = `PAYMENT-SIGNATURE: ${'QUJD'.repeat(5_000)}`
  const answer = await sendRaw(`POST /local/v1/x402 HTTP/1.1\r\n${HOST}${header}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`)
  t.equal(answer.status, 431)
  t.match(answer.headers, 'content-type: application/json')
  t.same(JSON.parse(answer.body), { error: { code: 'headers_too_large', message: 'Request Header Fields Too Large: the headers are over 16384 bytes' } })
  t.notMatch(answer.body, 'QUJD', 'the header is not echoed')
})

t.test('a body longer than its Content-Length: the rest is not HTTP, 400 invalid_request, nothing echoed', async (t) => {
  const answer = await sendRaw(`POST /local/v1/quote HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"call": {"to": "0xdeadbeef-overflow"}}`)
  t.equal(answer.status, 400)
  t.same(JSON.parse(answer.body), {
    error: { code: 'invalid_request', message: 'Bad Request: the bytes sent are not a valid HTTP request (a body longer than its Content-Length?)' },
  })
  t.notMatch(answer.body, 'overflow', 'the bytes are not echoed')
})

t.test('a method other than POST on /mcp and /rpc: 405, Allow: POST, a JSON-RPC error, whatever the body', async (t) => {
  const mcpNotAllowed = { jsonrpc: '2.0', error: { code: -32600, message: 'Method Not Allowed: an MCP endpoint takes POST only' } }
  for (const [method, path, body] of [
    ['PUT', '/mcp', ''],
    ['PUT', '/mcp/erc20', '{x'],
    ['PATCH', '/mcp', '{}'],
    ['GET', '/mcp', undefined],
    ['DELETE', '/mcp/erc20', ''],
  ] as const) {
    const response = await fetch(`${base}${path}`, { method, headers: { 'content-type': 'application/json' }, body })
    t.equal(response.status, 405, `${method} ${path} ${JSON.stringify(body)}`)
    t.equal(response.headers.get('allow'), 'POST')
    t.same(await response.json(), mcpNotAllowed)
  }
  for (const method of ['GET', 'PUT']) {
    const response = await fetch(`${base}/rpc`, { method, headers: { 'content-type': 'application/json' }, ...(method === 'PUT' ? { body: '' } : {}) })
    t.equal(response.status, 405, `${method} /rpc`)
    t.equal(response.headers.get('allow'), 'POST')
    t.same(await response.json(), {
      jsonrpc: '2.0',
      id: null,
      error: { code: -32600, message: 'Method Not Allowed: /rpc takes POST only', data: { code: 'method_not_allowed' } },
    })
  }
})

// A Host the origin guard refuses (issue 50, point 7): 403 in the shape of the binding the path belongs to.
t.test('a refused Host: 403, a REST error on REST and x402 paths, a JSON-RPC error on /mcp and /rpc', async (t) => {
  const rebound = 'Host: attacker.example\r\nConnection: close\r\n'
  const rest = await sendRaw(`GET /local/v1/status/x HTTP/1.1\r\n${rebound}\r\n`)
  t.equal(rest.status, 403)
  t.same(JSON.parse(rest.body), { error: { code: 'forbidden', message: 'Forbidden: Host or Origin not allowed' } })
  for (const path of ['/mcp', '/rpc']) {
    const rpc = await sendRaw(`POST ${path} HTTP/1.1\r\n${rebound}Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`)
    t.equal(rpc.status, 403, path)
    t.same(JSON.parse(rpc.body), { jsonrpc: '2.0', error: { code: -32600, message: 'Forbidden: Host or Origin not allowed' } }, path)
  }
})
