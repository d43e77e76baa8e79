import fc from 'fast-check'
import t from 'tap'
import { offlineConfig, startBruno } from './fixtures/bruno.ts'
import { modernMeta } from './fixtures/mcpHttp.ts'

// Property-based fuzzing of the MCP endpoint: bodies, headers and tool arguments of every shape
// (hex, addresses, huge numbers, deep nesting, long arrays, wrong types). Whatever comes in, Bruno
// answers with a documented status and, where there is a body, valid JSON-RPC; never a 5xx.

const env = { ...process.env }
const bruno = await startBruno(t, offlineConfig(env), env)
const RUNS = Number(process.env.BRUNO_FUZZ_RUNS ?? 2_000)

const TOOL_NAMES = ['erc20_approve', 'erc20_transfer', 'weth_unwrap', 'uniswap_swap_to_eth', 'uniswap_price', 'no_such_tool']
const METHODS = ['tools/call', 'tools/list', 'server/discover', 'initialize', 'ping', 'prompts/list', 'resources/read', 'x/y', '']

const hex = fc.stringMatching(/^0x[0-9a-fA-F]{0,80}$/)
const address = fc.stringMatching(/^0x[0-9a-fA-F]{40}$/)
const hugeNumber = fc.oneof(fc.bigInt({ min: -(2n ** 300n), max: 2n ** 300n }).map(String), fc.double().map(String), fc.constant('1e400'))
const scalar = fc.oneof(fc.string({ maxLength: 60 }), hex, address, hugeNumber, fc.integer(), fc.double(), fc.boolean(), fc.constant(null))
const value: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  node: fc.oneof({ depthSize: 'small', withCrossShrink: true }, scalar, fc.array(tie('node'), { maxLength: 6 }), fc.dictionary(fc.string({ maxLength: 12 }), tie('node'), { maxKeys: 6 })),
})).node
const deepNesting = fc.integer({ min: 10, max: 3_000 }).map((depth) => '['.repeat(depth) + ']'.repeat(depth))
const toolArguments = fc.record(
  {
    chain: fc.oneof(fc.constant('local'), scalar),
    token: fc.oneof(fc.constantFrom('USDC', 'usdc', 'WETH'), address, scalar),
    to: fc.oneof(address, scalar),
    spender: fc.oneof(address, scalar),
    recipient: fc.oneof(address, scalar),
    amount: fc.oneof(fc.constantFrom('1', '0', 'max', '1.5', '0.0000001'), hugeNumber, scalar),
    slippageBps: fc.oneof(fc.integer({ min: -10, max: 10_000 }), scalar),
    extra: value,
  },
  { requiredKeys: [] },
)
const request = fc.record({
  jsonrpc: fc.oneof(fc.constant('2.0'), scalar),
  id: fc.oneof(fc.integer(), fc.string({ maxLength: 20 }), fc.constant(null), fc.double()),
  method: fc.oneof(fc.constantFrom(...METHODS), scalar),
  params: fc.oneof(
    fc.record({ name: fc.oneof(fc.constantFrom(...TOOL_NAMES), scalar), arguments: fc.oneof(toolArguments, value), _meta: fc.oneof(fc.constant(modernMeta()), value) }, { requiredKeys: [] }),
    value,
  ),
}, { requiredKeys: [] })
const body = fc.oneof(
  request.map((message) => JSON.stringify(message)),
  fc.array(request, { maxLength: 4 }).map((batch) => JSON.stringify(batch)),
  deepNesting,
  fc.string({ maxLength: 200 }),
  value.map((anything) => JSON.stringify(anything) ?? 'null'),
)
const headerValue = fc.oneof(fc.constantFrom('2026-07-28', '2025-11-25', '2025-06-18', 'tools/call', 'erc20_transfer', '=?base64?ZXJjMjBfdHJhbnNmZXI=?=', '=?base64?***?='), fc.stringMatching(/^[\x20-\x7e]{0,40}$/))
const randomHeaders = fc.record(
  { 'mcp-protocol-version': headerValue, 'mcp-method': headerValue, 'mcp-name': headerValue, 'mcp-session-id': headerValue },
  { requiredKeys: [] },
)
const origin = fc.oneof({ weight: 9, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.constantFrom('http://localhost:1', 'https://evil.example', 'null') })
const path = fc.constantFrom('/mcp', '/mcp/erc20', '/mcp/uniswap,erc20', '/mcp/nope', '/mcp/erc20,erc20')

/** Arguments an encoder of a configured token accepts, amounts drawn wide: mostly answered, sometimes refused. */
const plausibleCall = fc.record({
  name: fc.constantFrom('erc20_transfer', 'erc20_approve', 'weth_unwrap'),
  arguments: fc.record({
    chain: fc.constant('local'),
    token: fc.constantFrom('USDC', 'usdc', 'WETH'),
    to: address.map((value) => value.toLowerCase()),
    spender: address.map((value) => value.toLowerCase()),
    amount: fc.oneof(fc.stringMatching(/^[0-9]{1,30}(\.[0-9]{1,20})?$/), fc.constant('max')),
  }),
}).map(({ name, arguments: { spender, to, ...rest } }) => ({
  name,
  arguments: name === 'erc20_approve' ? { ...rest, spender } : name === 'erc20_transfer' ? { ...rest, to } : { chain: rest.chain, amount: rest.amount },
}))

/** A well-formed tool call of either era whose arguments are fuzzed: reaches the tools themselves. */
const wellFormedCall = fc
  .record({
    era: fc.constantFrom('modern', 'legacy'),
    id: fc.integer({ min: 1 }),
    call: fc.oneof(
      plausibleCall,
      fc.record({ name: fc.constantFrom(...TOOL_NAMES), arguments: fc.oneof({ weight: 4, arbitrary: toolArguments }, { weight: 1, arbitrary: value }) }),
    ),
  })
  .map(({ era, id, call: { name, arguments: args } }) => {
    const modern = era === 'modern'
    const params = { name, arguments: args, ...(modern ? { _meta: modernMeta() } : {}) }
    const headers: Record<string, string> = modern
      ? { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': name }
      : { 'mcp-protocol-version': '2025-11-25' }
    return { headers, payload: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params }) }
  })
const exchange = fc
  .record({
    where: path,
    origin,
    message: fc.oneof(
      { weight: 3, arbitrary: wellFormedCall },
      { weight: 2, arbitrary: fc.record({ headers: randomHeaders, payload: body }) },
    ),
  })
  .map(({ where, origin: sentOrigin, message }) => ({
    where,
    payload: message.payload,
    headers: { ...message.headers, ...(sentOrigin === null ? {} : { origin: sentOrigin }) } as Record<string, string>,
  }))

/** The statuses SPEC.md documents for the MCP endpoint, and whether each carries a body. */
const DOCUMENTED: Record<number, 'json' | 'empty'> = { 200: 'json', 202: 'empty', 400: 'json', 403: 'json', 404: 'json', 405: 'json', 413: 'json', 415: 'json' }

t.test(`${RUNS} random requests: documented statuses, valid JSON-RPC, never a 5xx`, async (t) => {
  const statuses = new Map<number, number>()
  const toolResults = { ok: 0, isError: 0 }
  await fc.assert(
    fc.asyncProperty(exchange, async ({ where, headers, payload }) => {
      const response = await fetch(`${bruno.server.url}${where}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: payload })
      const text = await response.text()
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1)
      const kind = DOCUMENTED[response.status]
      if (!kind) throw new Error(`undocumented status ${response.status}: ${text.slice(0, 200)}`)
      if (text === '') return response.status === 202 || response.status === 404 || response.status === 405
      const reply = JSON.parse(text) as Record<string, unknown>
      if (reply.jsonrpc !== '2.0') throw new Error(`not JSON-RPC: ${text.slice(0, 200)}`)
      const hasResult = 'result' in reply
      const error = reply.error as { code?: unknown; message?: unknown } | undefined
      if (hasResult === (error !== undefined)) throw new Error(`exactly one of result and error: ${text.slice(0, 200)}`)
      if (error && (!Number.isInteger(error.code) || typeof error.message !== 'string')) throw new Error(`malformed error: ${text.slice(0, 200)}`)
      const result = reply.result as { isError?: boolean; structuredContent?: unknown; content?: unknown } | undefined
      if (result && 'content' in result) {
        if (result.isError) toolResults.isError++
        else if (result.structuredContent !== undefined) toolResults.ok++
        else throw new Error(`a successful tool result without structuredContent: ${text.slice(0, 200)}`)
      }
      return true
    }),
    { numRuns: RUNS },
  )
  t.comment(`statuses: ${JSON.stringify(Object.fromEntries(statuses))}; tool results: ${toolResults.ok} structured, ${toolResults.isError} isError`)
  t.ok((statuses.get(200) ?? 0) > RUNS / 4 && (statuses.get(400) ?? 0) > 0, 'the runs reached both answers and refusals')
  t.ok(toolResults.ok > 0 && toolResults.isError > 0, 'the tools both answered and refused')
  t.notOk([...statuses.keys()].some((status) => status >= 500), 'no 5xx')
})

t.test('the server is still up and answering after the fuzzing', async (t) => {
  const response = await fetch(bruno.mcpUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: modernMeta() } }),
  })
  t.equal(response.status, 200)
  t.notOk(bruno.logs.some((line) => line.includes('offline-rpc-secret-key')), 'no log line carries the RPC URL')
})
