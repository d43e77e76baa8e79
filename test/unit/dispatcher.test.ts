import { Type } from '@sinclair/typebox'
import type { FastifyBaseLogger } from 'fastify'
import pino from 'pino'
import t from 'tap'
import { McpDispatcher, type McpReply } from '../../core/mcp/dispatcher.ts'
import { ToolRegistry, type RegistryView } from '../../core/registry.ts'
import { ToolError, type GroupDefinition, type ToolContext } from '../../core/tool/tool.ts'
import type { TaskState } from '../../core/tool/task.ts'

// The MCP binding's parsing, era and header checks, routing and result shapes (core/mcp/dispatcher.ts),
// called directly with bodies and headers as Fastify hands them over: no server, no chain. The
// tools are a group defined here through the plugin API, as any plugin defines its own.

const MODERN = '2026-07-28'
const PV = 'io.modelcontextprotocol/protocolVersion'
const CAPS = 'io.modelcontextprotocol/clientCapabilities'
const SERVER = 'io.modelcontextprotocol/serverInfo'
const TASKS = 'io.modelcontextprotocol/tasks'
const serverInfo = { name: 'bruno', version: '9.9.9' }
const serverMeta = { [SERVER]: serverInfo }

const echo = {
  name: 'echo',
  description: 'Echoes.',
  input: Type.Object({ text: Type.String() }, { additionalProperties: false }),
  output: Type.Object({ echoed: Type.String() }, { additionalProperties: false }),
  handler: async ({ text }: { text: string }) => {
    if (text === 'refuse') throw new ToolError('refused: say something else')
    return { echoed: text }
  },
}
const tasks = new Map<string, TaskState>()
const slow = {
  name: 'slow',
  description: 'Starts work.',
  input: Type.Object({ id: Type.String() }, { additionalProperties: false }),
  output: Type.Object({ id: Type.String() }, { additionalProperties: false }),
  handler: async ({ id }: { id: string }) => ({ id }),
  task: { idOf: (output: { id: string }) => output.id, state: async (id: string) => tasks.get(id) },
}
const group: GroupDefinition = { name: 'unit', order: 1, instructions: 'Unit tools.', tools: [echo] }
const taskGroup: GroupDefinition = { name: 'tasky', order: 2, instructions: 'Task tools.', tools: [slow] }
const registry = new ToolRegistry()
registry.addGroup(group)
registry.addGroup(taskGroup)
const view = registry.view(['unit'])!
const taskView = registry.view(['unit', 'tasky'])!
const context = {} as ToolContext
const log = pino({ level: 'silent' }) as unknown as FastifyBaseLogger
const dispatcher = new McpDispatcher(serverInfo)

const modernHeaders = (method: string, name?: string, version = MODERN): Record<string, string> => ({
  'mcp-protocol-version': version,
  'mcp-method': method,
  ...(name === undefined ? {} : { 'mcp-name': name }),
})
const modernMeta = (extra: Record<string, unknown> = {}) => ({ [PV]: MODERN, [CAPS]: {}, ...extra })
const modern = (method: string, params: Record<string, unknown> = {}, id: number | string = 1) => ({ jsonrpc: '2.0', id, method, params: { ...params, _meta: modernMeta() } })
const legacy = (method: string, params: Record<string, unknown> = {}, id: number | string = 1) => ({ jsonrpc: '2.0', id, method, params })

async function send(body: unknown, headers: Record<string, string | string[]> = {}, on: RegistryView = view): Promise<McpReply & { json?: Record<string, unknown> }> {
  const reply = await dispatcher.dispatch(on, body, headers, context, log)
  return { ...reply, ...(reply.payload === undefined ? {} : { json: JSON.parse(reply.payload.toString()) as Record<string, unknown> }) }
}

t.test('the envelope: what is not one request is refused, a notification is 202', async (t) => {
  const refused = async (body: unknown, code: number, message: string, status = 400) => {
    const reply = await send(body)
    t.equal(reply.status, status, message)
    t.same(reply.json, { jsonrpc: '2.0', error: { code, message } }, message)
    t.same(reply.counted, { method: '(error)', tool: '', error: String(code) })
  }
  await refused([legacy('ping')], -32600, 'Invalid Request: batches are not supported')
  await refused(null, -32600, 'Invalid Request: the body must be a JSON-RPC object')
  await refused('ping', -32600, 'Invalid Request: the body must be a JSON-RPC object')
  await refused({ id: 1, method: 'ping' }, -32600, 'Invalid Request: "jsonrpc" must be "2.0"')
  await refused({ jsonrpc: '1.0', id: 1, method: 'ping' }, -32600, 'Invalid Request: "jsonrpc" must be "2.0"')
  await refused({ jsonrpc: '2.0', id: 1 }, -32600, 'Invalid Request: "method" must be a string')
  await refused({ jsonrpc: '2.0', id: 1, method: 7 }, -32600, 'Invalid Request: "method" must be a string')
  await refused({ jsonrpc: '2.0', id: 1, result: {} }, -32600, 'Invalid Request: a server takes no responses')
  await refused({ jsonrpc: '2.0', id: 1, error: { code: 1, message: 'x' } }, -32600, 'Invalid Request: a server takes no responses')
  // an id that cannot be read is not echoed
  await refused({ jsonrpc: '2.0', id: 1.5, method: 'ping' }, -32600, 'Invalid Request: "id" must be a string or an integer')
  await refused({ jsonrpc: '2.0', id: null, method: 'ping' }, -32600, 'Invalid Request: "id" must be a string or an integer')
  await refused({ jsonrpc: '2.0', id: true, method: 'ping' }, -32600, 'Invalid Request: "id" must be a string or an integer')
  // params that are not an object: invalid params, answered to the request's id (it was read)
  for (const params of [[], 'x', 3, false]) {
    const reply = await send({ jsonrpc: '2.0', id: 'r', method: 'ping', params })
    t.equal(reply.status, 400)
    t.same(reply.json, { jsonrpc: '2.0', id: 'r', error: { code: -32602, message: 'Invalid params: "params" must be an object' } })
  }
  // null params are no params
  t.same((await send({ jsonrpc: '2.0', id: 'r', method: 'ping', params: null })).json, { jsonrpc: '2.0', id: 'r', result: {} })
  // a notification: 202, no body, whatever it says
  for (const body of [{ jsonrpc: '2.0', method: 'notifications/initialized' }, { jsonrpc: '2.0', method: 'no/such', params: 'junk' }]) {
    const reply = await send(body)
    t.equal(reply.status, 202)
    t.equal(reply.payload, undefined)
    t.same(reply.counted, { method: '(notification)', tool: '' })
  }
  // no params: an empty object
  const ping = await send({ jsonrpc: '2.0', id: 0, method: 'ping' })
  t.equal(ping.status, 200)
  t.same(ping.json, { jsonrpc: '2.0', id: 0, result: {} })
  t.same(ping.counted, { method: 'ping', tool: '' })
  t.equal((await send({ jsonrpc: '2.0', id: 'abc', method: 'ping' })).json!.id, 'abc')
})

t.test('legacy era: the handshake, ping, lists, and versions', async (t) => {
  const init = await send(legacy('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'c', version: '1' } }))
  t.equal(init.status, 200)
  t.same(init.json, {
    jsonrpc: '2.0',
    id: 1,
    result: { protocolVersion: '2025-06-18', capabilities: { tools: { listChanged: false } }, serverInfo, instructions: view.instructions },
  })
  t.same(init.counted, { method: 'initialize', tool: '' })
  // an unknown (or missing) version is answered with the latest legacy one
  t.equal(((await send(legacy('initialize', { protocolVersion: '1999-01-01' }))).json!.result as Record<string, unknown>).protocolVersion, '2025-11-25')
  t.equal(((await send(legacy('initialize', { protocolVersion: 20250618 }))).json!.result as Record<string, unknown>).protocolVersion, '2025-11-25')
  t.equal(((await send(legacy('initialize'))).json!.result as Record<string, unknown>).protocolVersion, '2025-11-25')
  t.equal(((await send(legacy('initialize', { protocolVersion: '2025-03-26' }))).json!.result as Record<string, unknown>).protocolVersion, '2025-03-26')
  // each version's answer is made once and kept
  const a = await dispatcher.dispatch(view, legacy('initialize', { protocolVersion: '2025-03-26' }), {}, context, log)
  const b = await dispatcher.dispatch(view, legacy('initialize', { protocolVersion: '2025-03-26' }), {}, context, log)
  t.same(a.payload, b.payload)

  const list = await send(legacy('tools/list'), { 'mcp-protocol-version': '2025-06-18' })
  t.equal(list.status, 200)
  t.same(list.json, { jsonrpc: '2.0', id: 1, result: { tools: JSON.parse(view.toolsJson) } })
  t.same(list.counted, { method: 'tools/list', tool: '' })
  // legacy answers carry no modern fields
  t.notOk('_meta' in (list.json!.result as object))

  // a handshake naming an unknown version in its header (it is legacy whatever else the header says): -32022
  for (const header of ['1999-01-01', ['2025-06-18', '2025-06-18']] as const) {
    const reply = await send(legacy('initialize', { protocolVersion: '2025-06-18' }), { 'mcp-protocol-version': header as never })
    t.equal(reply.status, 400)
    t.same(reply.json, { jsonrpc: '2.0', id: 1, error: { code: -32022, message: 'Unsupported protocol version', data: { supported: [MODERN, '2025-11-25', '2025-06-18', '2025-03-26'], requested: header } } })
  }
  // any other request with a header that is not a legacy version is read as modern, and lacks its _meta
  for (const header of ['1999-01-01', ['2025-06-18', '2025-06-18']] as const) {
    const reply = await send(legacy('ping'), { 'mcp-protocol-version': header as never })
    t.same(reply.json, { jsonrpc: '2.0', id: 1, error: { code: -32602, message: `Invalid params: _meta["${PV}"] is required and must be a string` } })
  }
  // methods of the other era, or unknown: -32601 with HTTP 200
  for (const method of ['server/discover', 'tasks/get', 'no/such']) {
    const reply = await send(legacy(method))
    t.equal(reply.status, 200, method)
    t.same(reply.json, { jsonrpc: '2.0', id: 1, error: { code: -32601, message: `Method not found: ${method}` } })
  }
  // a path with no prompts or resources has none of their methods
  for (const method of ['prompts/list', 'prompts/get', 'resources/list', 'resources/templates/list', 'resources/read', 'completion/complete']) {
    t.equal((await send(legacy(method))).json!.error !== undefined, true, method)
  }
})

t.test('modern era: discovery, lists and the per-request version', async (t) => {
  const discover = await send(modern('server/discover'), modernHeaders('server/discover'))
  t.equal(discover.status, 200)
  t.same(discover.json, {
    jsonrpc: '2.0',
    id: 1,
    result: {
      resultType: 'complete',
      supportedVersions: [MODERN, '2025-11-25', '2025-06-18', '2025-03-26'],
      capabilities: { tools: { listChanged: false } },
      instructions: view.instructions,
      ttlMs: 3_600_000,
      cacheScope: 'public',
      _meta: serverMeta,
    },
  })
  const list = await send(modern('tools/list'), modernHeaders('tools/list'))
  t.same(list.json, { jsonrpc: '2.0', id: 1, result: { resultType: 'complete', tools: JSON.parse(view.toolsJson), ttlMs: 86_400_000, cacheScope: 'public', _meta: serverMeta } })
  // a path with a task tool advertises the Tasks extension (modern era only)
  const tasky = await send(modern('server/discover'), modernHeaders('server/discover'), taskView)
  t.same((tasky.json!.result as Record<string, unknown>).capabilities, { tools: { listChanged: false }, extensions: { [TASKS]: {} } })
  const taskyInit = await send(legacy('initialize', { protocolVersion: '2025-06-18' }), {}, taskView)
  t.same((taskyInit.json!.result as Record<string, unknown>).capabilities, { tools: { listChanged: false } })
  // removed in the modern era: 404 and -32601
  for (const method of ['initialize', 'ping', 'no/such', 'prompts/list']) {
    const reply = await send(modern(method), modernHeaders(method))
    t.equal(reply.status, 404, method)
    t.same(reply.json, { jsonrpc: '2.0', id: 1, error: { code: -32601, message: `Method not found: ${method}` } })
  }
  // a 2025 handshake sent with a modern version header is modern (and refused)
  t.equal((await send(legacy('initialize', { protocolVersion: '2025-06-18' }), modernHeaders('initialize'))).status, 400)
})

t.test('modern era: _meta and the headers must agree with the body', async (t) => {
  const refused = async (body: unknown, headers: Record<string, string | string[]>, code: number, message: string, data?: unknown) => {
    const reply = await send(body, headers)
    t.equal(reply.status, 400, message)
    t.same(reply.json, { jsonrpc: '2.0', id: 1, error: data === undefined ? { code, message } : { code, message, data } }, message)
  }
  // a modern header over a body without _meta
  await refused(legacy('tools/list'), modernHeaders('tools/list'), -32602, `Invalid params: _meta["${PV}"] is required and must be a string`)
  await refused(legacy('tools/list', { _meta: { [PV]: 7, [CAPS]: {} } }), modernHeaders('tools/list'), -32602, `Invalid params: _meta["${PV}"] is required and must be a string`)
  for (const capabilities of [undefined, null, [], 'x']) {
    await refused(legacy('tools/list', { _meta: { [PV]: MODERN, [CAPS]: capabilities } }), modernHeaders('tools/list'), -32602, `Invalid params: _meta["${CAPS}"] is required and must be an object`)
  }
  // _meta that is not an object is no modern marker: legacy, answered
  t.equal((await send(legacy('ping', { _meta: 'x' }))).status, 200)
  t.equal((await send(legacy('ping', { _meta: null }))).status, 200)
  const { 'mcp-protocol-version': _v, ...noVersion } = modernHeaders('tools/list')
  await refused(modern('tools/list'), noVersion, -32020, 'Header mismatch: MCP-Protocol-Version header is required')
  await refused(modern('tools/list'), modernHeaders('tools/list', undefined, '2025-06-18'), -32020, 'Header mismatch: MCP-Protocol-Version header value "2025-06-18" does not match body value "2026-07-28"')
  await refused(modern('tools/list'), { 'mcp-protocol-version': MODERN }, -32020, 'Header mismatch: Mcp-Method header is required')
  await refused(modern('tools/list'), modernHeaders('tools/call'), -32020, 'Header mismatch: Mcp-Method header value "tools/call" does not match body value "tools/list"')
  await refused(modern('tools/list'), { ...modernHeaders('tools/list'), 'mcp-method': ['tools/list', 'tools/list'] }, -32020, 'Header mismatch: Mcp-Method header is malformed')
  // Mcp-Name mirrors the named field, plain or in the Base64 sentinel form
  const call = modern('tools/call', { name: 'echo', arguments: { text: 'hi' } })
  await refused(call, modernHeaders('tools/call'), -32020, 'Header mismatch: Mcp-Name header is required')
  await refused(call, modernHeaders('tools/call', 'other'), -32020, 'Header mismatch: Mcp-Name header value "other" does not match body value "echo"')
  await refused(call, modernHeaders('tools/call', '=?base64?%%%?='), -32020, 'Header mismatch: Mcp-Name header is malformed')
  t.equal((await send(call, modernHeaders('tools/call', `=?base64?${Buffer.from('echo').toString('base64')}?=`))).status, 200)
  // a name that is not a string is not mirrored: the call itself refuses it
  const unnamed = await send(modern('tools/call', { name: 7 }), modernHeaders('tools/call'))
  t.same(unnamed.json, { jsonrpc: '2.0', id: 1, error: { code: -32602, message: 'Invalid params: "name" must be a string' } })
  t.equal(unnamed.status, 200)
  // a modern request for a version not served
  const future = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: { [PV]: '2099-01-01', [CAPS]: {} } } }
  await refused(future, modernHeaders('tools/list', undefined, '2099-01-01'), -32022, 'Unsupported protocol version', { supported: [MODERN, '2025-11-25', '2025-06-18', '2025-03-26'], requested: '2099-01-01' })
})

t.test('tools/call: results, refusals and unknown tools in both eras', async (t) => {
  const modernCall = await send(modern('tools/call', { name: 'echo', arguments: { text: 'hi' } }), modernHeaders('tools/call', 'echo'))
  t.equal(modernCall.status, 200)
  t.equal(modernCall.payload, `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[{"type":"text","text":"{\\"echoed\\":\\"hi\\"}"}],"structuredContent":{"echoed":"hi"},"_meta":${JSON.stringify(serverMeta)}}}`)
  t.same(modernCall.counted, { method: 'tools/call', tool: 'echo' })
  const legacyCall = await send(legacy('tools/call', { name: 'echo', arguments: { text: 'hi' } }))
  t.equal(legacyCall.payload, '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\\"echoed\\":\\"hi\\"}"}],"structuredContent":{"echoed":"hi"}}}')
  const refusal = await send(legacy('tools/call', { name: 'echo', arguments: { text: 'refuse' } }))
  t.same(refusal.json, { jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text: 'refused: say something else' }], isError: true } })
  t.same(refusal.counted, { method: 'tools/call', tool: 'echo', error: 'tool' })
  const modernRefusal = await send(modern('tools/call', { name: 'echo', arguments: { text: 'refuse' } }), modernHeaders('tools/call', 'echo'))
  t.same(modernRefusal.json, { jsonrpc: '2.0', id: 1, result: { resultType: 'complete', content: [{ type: 'text', text: 'refused: say something else' }], isError: true, _meta: serverMeta } })
  // no arguments: an empty object, which the schema refuses
  const noArgs = await send(legacy('tools/call', { name: 'echo' }))
  t.equal((noArgs.json!.result as Record<string, unknown>).isError, true)
  t.match(((noArgs.json!.result as { content: { text: string }[] }).content[0]!.text), /^Invalid arguments for echo: /)
  const unknown = await send(legacy('tools/call', { name: 'nope' }))
  t.same(unknown.json, { jsonrpc: '2.0', id: 1, error: { code: -32602, message: 'Unknown tool: nope' } })
  t.equal(unknown.status, 200)
  t.same(unknown.counted, { method: '(error)', tool: '', error: '-32602' })
  // a tool of another path is unknown here
  t.same((await send(legacy('tools/call', { name: 'slow', arguments: { id: 'x' } }))).json!.error, { code: -32602, message: 'Unknown tool: slow' })
})

t.test('tasks: a modern caller declaring the extension gets a task; tasks/get finds it', async (t) => {
  const state: TaskState = { status: 'working', createdAt: Date.UTC(2026, 0, 1), updatedAt: Date.UTC(2026, 0, 1, 0, 0, 1), ttlMs: null, pollIntervalMs: 1000 } as TaskState
  tasks.set('task-1', state)
  const declared = { _meta: modernMeta({ [CAPS]: { extensions: { [TASKS]: {} } } }) }
  const created = await send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'slow', arguments: { id: 'task-1' }, ...declared } }, modernHeaders('tools/call', 'slow'), taskView)
  t.same(created.json, {
    jsonrpc: '2.0',
    id: 1,
    result: {
      resultType: 'task',
      taskId: 'task-1',
      status: 'working',
      createdAt: '2026-01-01T00:00:00.000Z',
      lastUpdatedAt: '2026-01-01T00:00:01.000Z',
      ttlMs: null,
      pollIntervalMs: 1000,
      _meta: serverMeta,
    },
  })
  t.same(created.counted, { method: 'tools/call', tool: 'slow' })
  // without the declaration, or in the legacy era: an ordinary result
  const plain = await send(modern('tools/call', { name: 'slow', arguments: { id: 'task-1' } }), modernHeaders('tools/call', 'slow'), taskView)
  t.equal((plain.json!.result as Record<string, unknown>).resultType, 'complete')
  t.same((plain.json!.result as Record<string, unknown>).structuredContent, { id: 'task-1' })
  const legacyDeclared = await send(legacy('tools/call', { name: 'slow', arguments: { id: 'task-1' }, _meta: { [CAPS]: { extensions: { [TASKS]: {} } } } }), {}, taskView)
  t.same((legacyDeclared.json!.result as Record<string, unknown>).structuredContent, { id: 'task-1' })
  // a task the tool cannot find after answering: a fault, not a result
  const lost = await send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'slow', arguments: { id: 'gone' }, ...declared } }, modernHeaders('tools/call', 'slow'), taskView)
  t.equal((lost.json!.error as Record<string, unknown>).code, -32603)

  const get = await send({ jsonrpc: '2.0', id: 2, method: 'tasks/get', params: { taskId: 'task-1', ...declared } }, modernHeaders('tasks/get', 'task-1'), taskView)
  t.same(get.json, {
    jsonrpc: '2.0',
    id: 2,
    result: { resultType: 'complete', taskId: 'task-1', status: 'working', createdAt: '2026-01-01T00:00:00.000Z', lastUpdatedAt: '2026-01-01T00:00:01.000Z', ttlMs: null, pollIntervalMs: 1000, _meta: serverMeta },
  })
  for (const method of ['tasks/update', 'tasks/cancel']) {
    const ack = await send({ jsonrpc: '2.0', id: 3, method, params: { taskId: 'task-1', ...declared } }, modernHeaders(method, 'task-1'), taskView)
    t.same(ack.json, { jsonrpc: '2.0', id: 3, result: { resultType: 'complete', _meta: serverMeta } }, method)
    const missing = await send({ jsonrpc: '2.0', id: 3, method, params: { taskId: 'nope', ...declared } }, modernHeaders(method, 'nope'), taskView)
    t.same(missing.json!.error, { code: -32602, message: 'Failed to retrieve task: Task not found' }, method)
  }
  // a path without task tools has no tasks/* methods
  const none = await send({ jsonrpc: '2.0', id: 2, method: 'tasks/get', params: { taskId: 'task-1', ...declared } }, modernHeaders('tasks/get', 'task-1'))
  t.same(none.json!.error, { code: -32601, message: 'Method not found: tasks/get' })
  t.equal(none.status, 404)
  for (const method of ['tasks/update', 'tasks/cancel']) {
    t.equal((await send({ jsonrpc: '2.0', id: 2, method, params: { taskId: 'task-1', ...declared } }, modernHeaders(method, 'task-1'))).status, 404, method)
  }
})
