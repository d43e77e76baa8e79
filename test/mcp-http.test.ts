import { request as httpRequest } from 'node:http'
import t from 'tap'
import { offlineConfig, startBruno } from './fixtures/bruno.ts'
import { RawMcpClient, modernHeaders, modernMeta, postRaw } from './fixtures/mcpHttp.ts'

// Every status and error code of the MCP binding (DESIGN §6), over raw HTTP, against a running
// Bruno with the real groups. The encoders of configured tokens need no chain, so none runs here.

const env = { ...process.env }
const bruno = await startBruno(t, offlineConfig(env), env)
const url = bruno.mcpUrl
const transfer = { chain: 'local', token: 'USDC', to: '0x1111111111111111111111111111111111111111', amount: '1.5' }

function modern(method: string, params: Record<string, unknown> = {}, id: number | string = 1) {
  return { jsonrpc: '2.0', id, method, params: { ...params, _meta: modernMeta() } }
}

function legacy(method: string, params: Record<string, unknown> = {}, id: number | string = 1) {
  return { jsonrpc: '2.0', id, method, params }
}

/** node:http, because fetch cannot set Host. */
function rawPost(path: string, headers: Record<string, string>, body: string, to = url): Promise<{ status: number; body: string }> {
  const target = new URL(to)
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: target.hostname, port: target.port, path, method: 'POST', headers }, (res) => {
      let text = ''
      res.on('data', (chunk) => (text += chunk))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }))
    })
    req.on('error', reject)
    req.end(body)
  })
}

t.test('modern era: server/discover', async (t) => {
  const reply = await postRaw(url, modern('server/discover'), modernHeaders('server/discover'))
  t.equal(reply.status, 200)
  t.equal(reply.headers.get('content-type'), 'application/json; charset=utf-8')
  const result = reply.json.result
  t.equal(result.resultType, 'complete')
  t.same(result.supportedVersions, ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26'])
  t.same(result.capabilities, { tools: { listChanged: false } })
  t.same(result._meta['io.modelcontextprotocol/serverInfo'].name, 'bruno')
  t.equal(typeof result.ttlMs, 'number')
  t.ok(result.ttlMs > 0)
  t.equal(result.cacheScope, 'public')
  t.match(result.instructions, /erc20_approve|ERC-20/)
  t.match(result.instructions, /uniswap/i)
})

t.test('modern era: tools/list is cacheable and every schema is closed', async (t) => {
  const reply = await postRaw(url, modern('tools/list'), modernHeaders('tools/list'))
  t.equal(reply.status, 200)
  const result = reply.json.result
  t.equal(result.resultType, 'complete')
  t.equal(result.cacheScope, 'public')
  t.ok(result.ttlMs >= 3_600_000, 'a long ttl: tools change only with a deployment')
  t.equal(result._meta['io.modelcontextprotocol/serverInfo'].name, 'bruno')
  t.same(
    result.tools.map((tool: { name: string }) => tool.name),
    ['erc20_approve', 'erc20_transfer', 'weth_unwrap', 'uniswap_swap_to_eth', 'uniswap_price'],
  )
  for (const tool of result.tools) {
    t.match(tool.name, /^[A-Za-z0-9_.-]+$/)
    t.equal(tool.inputSchema.type, 'object', `${tool.name} inputSchema is an object`)
    t.equal(tool.inputSchema.additionalProperties, false, `${tool.name} inputSchema is closed`)
    t.equal(tool.outputSchema.type, 'object', `${tool.name} declares an outputSchema`)
    t.same(tool.inputSchema.properties.chain.const ?? tool.inputSchema.properties.chain.anyOf, 'local', `${tool.name}'s chain is the configured names`)
  }
})

t.test('cached answers (lists, discovery) carry the request\'s own id, an exact length, and are logged and counted', async (t) => {
  const ids: (number | string)[] = [0, 2 ** 53 - 1, -700, '', 'é "quoted" \\ \u2028 id', 'x'.repeat(200)]
  const lengths = new Set<string>()
  // Assertion names carry the id's index: a U+2028 in a name would end the TAP line.
  for (const [index, id] of ids.entries()) {
    const reply = await postRaw(url, modern('tools/list', {}, id), modernHeaders('tools/list'))
    t.equal(reply.status, 200)
    t.equal(reply.headers.get('content-type'), 'application/json; charset=utf-8')
    t.equal(Number(reply.headers.get('content-length')), Buffer.byteLength(reply.text), `content-length is the body's bytes for id #${index}`)
    t.equal(reply.json.id, id, `the answer's id is the request's (#${index})`)
    t.equal(reply.json.jsonrpc, '2.0')
    t.equal(reply.json.result.tools.length, 5)
    lengths.add(reply.headers.get('content-length')!)
  }
  t.equal(lengths.size, ids.length, 'each id changes the length, so no answer was cut or padded to another\'s')
  const legacyList = await postRaw(url, legacy('tools/list', {}, 'legacy-1'), { 'mcp-protocol-version': '2025-11-25' })
  t.same([legacyList.json.id, Object.keys(legacyList.json.result)], ['legacy-1', ['tools']])
  const discover = await postRaw(url, modern('server/discover', {}, 'd-1'), modernHeaders('server/discover'))
  t.equal(discover.json.id, 'd-1')

  const marker = `list-${Date.now()}`
  await postRaw(url, modern('tools/list', {}, marker), modernHeaders('tools/list'))
  const access = bruno.logs
    .map((line) => JSON.parse(line) as { msg: string; statusCode?: number; url?: string; level: number; responseTime?: number })
    .filter((line) => line.msg === 'request completed' && line.url === '/mcp' && line.statusCode === 200)
  t.ok(access.length >= ids.length + 3, `every cached answer has its access line (${access.length})`)
  t.ok(access.every((line) => line.level === 20 && typeof line.responseTime === 'number'), 'at debug, with its time')
  const metrics = await (await fetch(url.replace(/\/mcp$/, '/metrics'))).text()
  const listed = Number(/bruno_mcp_requests_total\{method="tools\/list",tool=""\} (\d+)/.exec(metrics)?.[1])
  t.ok(listed >= ids.length + 2, `metrics count the lists (${listed})`)
})

t.test('modern era: tools/call returns structuredContent and the same JSON as text', async (t) => {
  const client = new RawMcpClient(url)
  const result = await client.callTool('erc20_transfer', transfer)
  t.equal(result.resultType, 'complete')
  t.notOk(result.isError)
  t.same(JSON.parse(result.content[0].text), result.structuredContent)
  t.equal(result._meta['io.modelcontextprotocol/serverInfo'].name, 'bruno')
  t.equal(client.validated, 1, 'the result matched its outputSchema')
})

t.test('modern era: Mcp-Name may be Base64-sentinel encoded', async (t) => {
  const encoded = `=?base64?${Buffer.from('erc20_transfer').toString('base64')}?=`
  const reply = await postRaw(url, modern('tools/call', { name: 'erc20_transfer', arguments: transfer }), modernHeaders('tools/call', encoded))
  t.equal(reply.status, 200)
  t.notOk(reply.json.result.isError)
})

t.test('modern era: header mismatches are 400 / -32020', async (t) => {
  const call = modern('tools/call', { name: 'erc20_transfer', arguments: transfer })
  const cases: [string, Record<string, string>, unknown][] = [
    ['MCP-Protocol-Version missing', { 'mcp-method': 'tools/call', 'mcp-name': 'erc20_transfer' }, call],
    ['MCP-Protocol-Version differs from _meta', modernHeaders('tools/call', 'erc20_transfer', '2025-11-25'), call],
    ['Mcp-Method missing', { 'mcp-protocol-version': '2026-07-28', 'mcp-name': 'erc20_transfer' }, call],
    ['Mcp-Method differs', modernHeaders('tools/list', 'erc20_transfer'), call],
    ['Mcp-Name missing on tools/call', modernHeaders('tools/call'), call],
    ['Mcp-Name differs', modernHeaders('tools/call', 'erc20_approve'), call],
    ['Mcp-Name sentinel encodes another name', modernHeaders('tools/call', `=?base64?${Buffer.from('erc20_approve').toString('base64')}?=`), call],
    ['Mcp-Name sentinel is not Base64', modernHeaders('tools/call', '=?base64?***?='), call],
  ]
  for (const [label, headers, body] of cases) {
    const reply = await postRaw(url, body, headers)
    t.equal(reply.status, 400, `${label}: 400`)
    t.equal(reply.json.error.code, -32020, `${label}: -32020`)
    t.equal(reply.json.id, 1, `${label}: the id is echoed`)
  }
})

t.test('modern era: _meta missing its required fields is 400 / -32602', async (t) => {
  const noCapabilities = { jsonrpc: '2.0', id: 7, method: 'tools/list', params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } } }
  let reply = await postRaw(url, noCapabilities, modernHeaders('tools/list'))
  t.equal(reply.status, 400)
  t.equal(reply.json.error.code, -32602)
  t.match(reply.json.error.message, /clientCapabilities/)

  reply = await postRaw(url, legacy('tools/list', {}, 8), modernHeaders('tools/list'))
  t.equal(reply.status, 400, 'a modern version header over a body without _meta')
  t.equal(reply.json.error.code, -32602)
  t.match(reply.json.error.message, /protocolVersion/)
})

t.test('modern era: an unsupported version is 400 / -32022 with supported and requested', async (t) => {
  const body = { jsonrpc: '2.0', id: 3, method: 'tools/list', params: { _meta: modernMeta('1900-01-01') } }
  const reply = await postRaw(url, body, modernHeaders('tools/list', undefined, '1900-01-01'))
  t.equal(reply.status, 400)
  t.equal(reply.json.error.code, -32022)
  t.same(reply.json.error.data, { supported: ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26'], requested: '1900-01-01' })
})

t.test('modern era: an unknown method, or one 2026-07-28 removed, is 404 / -32601', async (t) => {
  // Removed in 2026-07-28 (changelog): the initialize handshake, ping, logging/setLevel,
  // resources/subscribe and unsubscribe, tasks/result and tasks/list.
  const removed = ['initialize', 'ping', 'logging/setLevel', 'resources/subscribe', 'resources/unsubscribe', 'tasks/result', 'tasks/list']
  for (const method of ['tools/frobnicate', 'initialize/extra', ...removed]) {
    const reply = await postRaw(url, modern(method), modernHeaders(method))
    t.equal(reply.status, 404, method)
    t.equal(reply.json.error.code, -32601, method)
    t.equal(reply.json.error.message, `Method not found: ${method}`, method)
  }
  // A 2026-07-28 initialize as a 2025 client library would build it, plus the modern _meta.
  const handshake = modern('initialize', { protocolVersion: '2026-07-28', capabilities: {}, clientInfo: { name: 't', version: '1' } })
  const reply = await postRaw(url, handshake, modernHeaders('initialize'))
  t.equal(reply.status, 404, 'initialize with modern _meta')
  t.equal(reply.json.error.code, -32601)
  t.equal(reply.json.result, undefined, 'no handshake is answered in 2026-07-28')
})

t.test('legacy era: initialize, initialized, ping, tools/list, tools/call', async (t) => {
  const discover = await postRaw(url, modern('server/discover'), modernHeaders('server/discover'))
  for (const version of ['2025-11-25', '2025-06-18', '2025-03-26']) {
    const reply = await postRaw(url, legacy('initialize', { protocolVersion: version, capabilities: {}, clientInfo: { name: 't', version: '1' } }))
    t.equal(reply.status, 200)
    t.equal(reply.headers.get('mcp-session-id'), null, 'no session id is minted')
    t.equal(reply.json.result.protocolVersion, version, `${version} is echoed`)
    t.same(reply.json.result.capabilities, discover.json.result.capabilities, 'the same capabilities as discover')
    t.equal(reply.json.result.instructions, discover.json.result.instructions, 'the same instructions as discover')
    t.equal(reply.json.result.serverInfo.name, 'bruno')
  }
  const older = await postRaw(url, legacy('initialize', { protocolVersion: '2024-11-05', capabilities: {} }))
  t.equal(older.json.result.protocolVersion, '2025-11-25', 'an unknown version is answered with the latest legacy one')

  const initialized = await postRaw(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, { 'mcp-protocol-version': '2025-11-25' })
  t.equal(initialized.status, 202)
  t.equal(initialized.text, '')

  const ping = await postRaw(url, legacy('ping', {}, 'p1'), { 'mcp-protocol-version': '2025-11-25' })
  t.same(ping.json, { jsonrpc: '2.0', id: 'p1', result: {} })

  const list = await postRaw(url, legacy('tools/list'), { 'mcp-protocol-version': '2025-06-18', 'mcp-session-id': 'made-up' })
  t.equal(list.status, 200)
  t.equal(list.json.result.tools.length, 5)
  t.equal(list.json.result.resultType, undefined, 'legacy results carry no modern fields')

  const call = await postRaw(url, legacy('tools/call', { name: 'erc20_transfer', arguments: transfer }), { 'mcp-protocol-version': '2025-11-25' })
  t.equal(call.status, 200)
  t.same(JSON.parse(call.json.result.content[0].text), call.json.result.structuredContent)

  const unknown = await postRaw(url, legacy('resources/list'), { 'mcp-protocol-version': '2025-11-25' })
  t.equal(unknown.json.error.code, -32601)

  const badVersion = await postRaw(url, legacy('initialize', { protocolVersion: '2025-11-25' }), { 'mcp-protocol-version': '2024-01-01' })
  t.equal(badVersion.status, 400, 'a legacy request naming an unknown version in its header')
  t.equal(badVersion.json.error.code, -32022)
})

t.test('any notification is 202 with no body', async (t) => {
  for (const body of [
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } },
    { jsonrpc: '2.0', method: 'notifications/whatever', params: { _meta: modernMeta() } },
  ]) {
    const reply = await postRaw(url, body, modernHeaders(body.method))
    t.equal(reply.status, 202, body.method)
    t.equal(reply.text, '', `${body.method}: no body`)
  }
})

t.test('transport: GET and DELETE are 405; sessions are never minted', async (t) => {
  for (const method of ['GET', 'DELETE']) {
    for (const path of ['/mcp', '/mcp/erc20']) {
      const response = await fetch(`${bruno.server.url}${path}`, { method, headers: { 'mcp-session-id': 'abc', 'last-event-id': '1' } })
      t.equal(response.status, 405, `${method} ${path}`)
      t.equal(response.headers.get('allow'), 'POST')
      t.equal(response.headers.get('mcp-session-id'), null)
    }
  }
})

t.test('transport: malformed bodies are JSON-RPC errors', async (t) => {
  let reply = await postRaw(url, '{"jsonrpc":"2.0","id":1,', modernHeaders('tools/list'))
  t.equal(reply.status, 400)
  t.same(reply.json, { jsonrpc: '2.0', error: { code: -32700, message: 'Parse error: the body is not valid JSON' } })

  reply = await postRaw(url, [modern('tools/list')], modernHeaders('tools/list'))
  t.equal(reply.status, 400)
  t.equal(reply.json.error.code, -32600, 'batches are refused')

  reply = await postRaw(url, { jsonrpc: '1.0', id: 1, method: 'tools/list' })
  t.equal(reply.json.error.code, -32600)
  t.equal(reply.status, 400)

  reply = await postRaw(url, { jsonrpc: '2.0', id: null, method: 'tools/list' })
  t.equal(reply.json.error.code, -32600, 'a null id is refused')

  reply = await postRaw(url, { jsonrpc: '2.0', id: 1, result: {} })
  t.equal(reply.json.error.code, -32600, 'a response sent to the server')

  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'hello' })
  t.equal(response.status, 415)
  t.equal((await response.json()).error.code, -32600)
})

t.test('transport: a body over the limit is 413', async (t) => {
  const big = modern('tools/call', { name: 'erc20_transfer', arguments: { ...transfer, padding: 'x'.repeat(70_000) } })
  const reply = await postRaw(url, big, modernHeaders('tools/call', 'erc20_transfer'))
  t.equal(reply.status, 413)
  t.equal(reply.json.error.code, -32600)
})

t.test('transport: a present, invalid Origin is 403; loopback Origins and Hosts pass', async (t) => {
  const headers = modernHeaders('tools/list')
  let reply = await postRaw(url, modern('tools/list'), { ...headers, origin: 'https://evil.example' })
  t.equal(reply.status, 403)
  t.equal(reply.json.error.code, -32600)
  t.notOk('id' in reply.json, 'the 403 error has no id')

  reply = await postRaw(url, modern('tools/list'), { ...headers, origin: 'http://localhost:5173' })
  t.equal(reply.status, 200, 'a loopback origin')

  const body = JSON.stringify(modern('tools/list'))
  const port = new URL(url).port
  const base = { 'content-type': 'application/json', ...headers }
  t.equal((await rawPost('/mcp', { ...base, host: `attacker.example:${port}` }, body)).status, 403, 'a rebound Host')
  t.equal((await rawPost('/mcp', { ...base, host: `localhost:${port}` }, body)).status, 200, 'localhost Host')
  t.equal((await rawPost('/mcp', { ...base, host: `127.0.0.1:${port}`, origin: 'null' }, body)).status, 403, 'Origin: null')
})

t.test('transport: off loopback, an Origin that is the allowed Host itself passes (Bruno\'s own signing page); another is 403', async (t) => {
  const listed = await startBruno(t, offlineConfig(env, { server: { host: '127.0.0.1', port: 0, allowedHosts: ['bruno.example'], rateLimit: { max: 1_000_000 } } }), env)
  const body = JSON.stringify(modern('tools/list'))
  const base = { 'content-type': 'application/json', ...modernHeaders('tools/list'), host: 'bruno.example' }
  const status = async (origin?: string) => (await rawPost('/mcp', origin ? { ...base, origin } : base, body, listed.mcpUrl)).status
  t.equal(await status(), 200, 'no Origin')
  t.equal(await status('http://bruno.example'), 200, 'its own origin')
  t.equal(await status('https://BRUNO.example'), 200, 'its own origin, in any case, over https (behind a TLS proxy)')
  t.equal(await status('http://evil.example'), 403, 'another origin')
  t.equal(await status('http://bruno.example:8443'), 403, 'another port is another origin')
  t.equal(await status('http://bruno.example.evil.example'), 403, 'a name that only starts like it')
  t.equal(await status('null'), 403, 'Origin: null')
  // Any Host (`*`): a rebound name is answered, so its own origin must not be.
  const anyHost = await startBruno(t, offlineConfig(env, { server: { host: '127.0.0.1', port: 0, allowedHosts: ['*'], rateLimit: { max: 1_000_000 } } }), env)
  const rebound = { ...base, host: 'evil.example' }
  t.equal((await rawPost('/mcp', rebound, body, anyHost.mcpUrl)).status, 200, 'with allowedHosts "*", any Host')
  t.equal((await rawPost('/mcp', { ...rebound, origin: 'http://evil.example' }, body, anyHost.mcpUrl)).status, 403, 'but not its own origin: only a named Host\'s')
})

t.test('groups: each path lists exactly its groups, in the fixed order', async (t) => {
  const names = async (path: string) => {
    const reply = await postRaw(`${url}${path}`, modern('tools/list'), modernHeaders('tools/list'))
    return reply.json.result.tools.map((tool: { name: string }) => tool.name)
  }
  t.same(await names('/erc20'), ['erc20_approve', 'erc20_transfer', 'weth_unwrap'])
  t.same(await names('/uniswap'), ['uniswap_swap_to_eth', 'uniswap_price'])
  t.same(await names('/uniswap,erc20'), await names(''), 'the path order does not change the list order')

  const unknown = await postRaw(`${url}/erc20,nft`, modern('tools/list'), modernHeaders('tools/list'))
  t.equal(unknown.status, 404)
  t.equal(unknown.text, '', 'no MCP body')
  const notEnabled = await postRaw(`${url}/bruno`, modern('tools/list'), modernHeaders('tools/list'))
  t.equal(notEnabled.status, 404, 'a group this deployment does not serve')

  const outside = await postRaw(`${url}/uniswap`, modern('tools/call', { name: 'erc20_transfer', arguments: transfer }), modernHeaders('tools/call', 'erc20_transfer'))
  t.equal(outside.status, 200)
  t.equal(outside.json.error.code, -32602)
  t.equal(outside.json.error.message, 'Unknown tool: erc20_transfer')
})

t.test('groups: instructions are composed from the path\'s groups', async (t) => {
  const instructions = async (path: string) =>
    (await postRaw(`${url}${path}`, modern('server/discover'), modernHeaders('server/discover'))).json.result.instructions as string
  const erc20 = await instructions('/erc20')
  const uniswap = await instructions('/uniswap')
  const both = await instructions('')
  t.not(erc20, uniswap)
  t.ok(both.includes(erc20.split('\n\n').at(-1)!), 'the erc20 snippet is in the full composition')
  t.ok(both.includes(uniswap.split('\n\n').at(-1)!), 'the uniswap snippet is in the full composition')
  t.notOk(erc20.includes(uniswap.split('\n\n').at(-1)!), 'the uniswap snippet is not on the erc20 path')
})

t.test('tool errors: bad arguments are an isError result naming the field', async (t) => {
  const client = new RawMcpClient(url)
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ ...transfer, to: '0x123' }, /\/to/],
    [{ ...transfer, chain: 'mainnet' }, /\/chain/],
    [{ ...transfer, extra: 1 }, /extra|Unexpected property/],
    [{ chain: 'local' }, /\/token|\/to|\/amount/],
  ]
  for (const [args, reason] of cases) {
    const result = await client.callTool('erc20_transfer', args)
    t.equal(result.isError, true)
    t.equal(result.structuredContent, undefined, 'no structuredContent on an error')
    t.match(result.content[0].text, reason)
  }
  const reply = await postRaw(url, modern('tools/call', { name: 42 }), modernHeaders('tools/call'))
  t.equal(reply.json.error.code, -32602, 'a non-string tool name is malformed')
})

t.test('no log line carries the RPC URL', async (t) => {
  t.ok(bruno.logs.length > 0)
  t.notOk(bruno.logs.some((line) => line.includes('offline-rpc-secret-key')))
})
