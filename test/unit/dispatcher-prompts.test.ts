import { Type } from '@sinclair/typebox'
import type { FastifyBaseLogger } from 'fastify'
import pino from 'pino'
import t from 'tap'
import { McpDispatcher } from '../../core/mcp/dispatcher.ts'
import { complete } from '../../core/mcp/complete.ts'
import { getPrompt } from '../../core/mcp/getPrompt.ts'
import { readResource } from '../../core/mcp/readResource.ts'
import { ToolRegistry, type RegistryView } from '../../core/registry.ts'
import type { TaskState } from '../../core/tool/task.ts'
import { ToolError, type GroupDefinition, type ToolContext } from '../../core/tool/tool.ts'

// The MCP binding's prompts, resources, completions and task states (core/mcp/dispatcher.ts): what
// each path advertises and answers, per era. test/unit/dispatcher.test.ts has the envelope, the
// headers and tools/call. The prompt, resource and template are a group's own, defined here.

const MODERN = '2026-07-28'
const PV = 'io.modelcontextprotocol/protocolVersion'
const CAPS = 'io.modelcontextprotocol/clientCapabilities'
const TASKS = 'io.modelcontextprotocol/tasks'
const serverInfo = { name: 'bruno', version: '9.9.9' }
const serverMeta = { 'io.modelcontextprotocol/serverInfo': serverInfo }
const context = {} as ToolContext
const lines: Record<string, unknown>[] = []
const log = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) }) as unknown as FastifyBaseLogger
const dispatcher = new McpDispatcher(serverInfo)

const noop = {
  name: 'noop',
  description: 'Nothing.',
  input: Type.Object({}, { additionalProperties: false }),
  output: Type.Object({}, { additionalProperties: false }),
  handler: async () => ({}),
}
const prompt = {
  name: 'greet',
  description: 'Greets.',
  arguments: [{ name: 'who', description: 'whom', required: true, complete: () => ['alice', 'albert', 'bob'] }],
  render: (args: Readonly<Record<string, string>>) => `Hello ${args.who}`,
}
const resource = { uri: 'unit://config', name: 'config', description: 'A config.', mimeType: 'application/json', cache: { ttlMs: 5_000, scope: 'public' as const }, read: async () => '{"a":1}' }
const template = {
  uriTemplate: 'unit://items/{id}',
  name: 'item',
  description: 'An item.',
  mimeType: 'application/json',
  cache: { ttlMs: 1_000, scope: 'private' as const },
  complete: { id: () => ['one', 'two'] },
  read: async (variables: Readonly<Record<string, string>>) => (variables.id === 'one' ? '{"id":"one"}' : undefined),
}

const tasks = new Map<string, TaskState | 'refuse' | 'fail'>()
const slow = {
  name: 'slow',
  description: 'Starts work.',
  input: Type.Object({ id: Type.String() }, { additionalProperties: false }),
  output: Type.Object({ id: Type.String() }, { additionalProperties: false }),
  handler: async ({ id }: { id: string }) => ({ id }),
  task: {
    idOf: (output: { id: string }) => output.id,
    state: async (id: string) => {
      const state = tasks.get(id)
      if (state === 'refuse') throw new ToolError(`task ${id} is not yours`)
      if (state === 'fail') throw new Error('the store broke')
      return state
    },
  },
}

function viewOf(name: string, extra: Partial<GroupDefinition>, tools: GroupDefinition['tools'] = [noop]): RegistryView {
  const registry = new ToolRegistry()
  registry.addGroup({ name, order: 1, instructions: `${name}.`, tools, ...extra })
  return registry.view()!
}
const promptView = viewOf('prompts', { prompts: [prompt] })
const resourceView = viewOf('resources', { resources: [resource] })
const templateView = viewOf('templates', { resourceTemplates: [template] })
const everything = viewOf('everything', { prompts: [prompt], resources: [resource], resourceTemplates: [template] })
const taskView = viewOf('tasks', {}, [slow])

const headers = (method: string, name?: string) => ({ 'mcp-protocol-version': MODERN, 'mcp-method': method, ...(name ? { 'mcp-name': name } : {}) })
const meta = (tasks = false) => ({ [PV]: MODERN, [CAPS]: tasks ? { extensions: { [TASKS]: {} } } : {} })
async function modern(view: RegistryView, method: string, params: Record<string, unknown> = {}, name?: string, declareTasks = false) {
  const reply = await dispatcher.dispatch(view, { jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: meta(declareTasks) } }, headers(method, name), context, log)
  return { ...reply, json: JSON.parse(reply.payload!.toString()) as Record<string, unknown> }
}
async function legacy(view: RegistryView, method: string, params: Record<string, unknown> = {}) {
  const reply = await dispatcher.dispatch(view, { jsonrpc: '2.0', id: 1, method, params }, {}, context, log)
  return { ...reply, json: JSON.parse(reply.payload!.toString()) as Record<string, unknown> }
}
const capabilitiesOf = async (view: RegistryView) => ({
  legacy: ((await legacy(view, 'initialize', { protocolVersion: '2025-06-18' })).json.result as Record<string, unknown>).capabilities,
  modern: ((await modern(view, 'server/discover')).json.result as Record<string, unknown>).capabilities,
})

t.test('what each path advertises', async (t) => {
  const tools = { listChanged: false }
  t.same(await capabilitiesOf(promptView), { legacy: { tools, prompts: { listChanged: false }, completions: {} }, modern: { tools, prompts: { listChanged: false }, completions: {} } })
  t.same(await capabilitiesOf(resourceView), { legacy: { tools, resources: { listChanged: false } }, modern: { tools, resources: { listChanged: false } } })
  t.same(await capabilitiesOf(templateView), { legacy: { tools, resources: { listChanged: false }, completions: {} }, modern: { tools, resources: { listChanged: false }, completions: {} } })
  t.same(await capabilitiesOf(taskView), { legacy: { tools }, modern: { tools, extensions: { [TASKS]: {} } } })
})

t.test('the lists, per era', async (t) => {
  const lists = [
    ['prompts/list', 'prompts', everything.promptsJson],
    ['resources/list', 'resources', everything.resourcesJson],
    ['resources/templates/list', 'resourceTemplates', everything.templatesJson],
  ] as const
  for (const [method, key, json] of lists) {
    t.same((await legacy(everything, method)).json, { jsonrpc: '2.0', id: 1, result: { [key]: JSON.parse(json) } }, method)
    const reply = await modern(everything, method)
    t.same(reply.json, { jsonrpc: '2.0', id: 1, result: { resultType: 'complete', [key]: JSON.parse(json), ttlMs: 86_400_000, cacheScope: 'public', _meta: serverMeta } }, method)
    t.same(reply.counted, { method, tool: '' })
  }
  // a path without them has none of their methods
  for (const method of ['prompts/list', 'prompts/get']) t.same((await legacy(resourceView, method)).json.error, { code: -32601, message: `Method not found: ${method}` }, method)
  for (const method of ['resources/list', 'resources/templates/list', 'resources/read']) t.same((await legacy(promptView, method)).json.error, { code: -32601, message: `Method not found: ${method}` }, method)
  t.same((await legacy(resourceView, 'completion/complete')).json.error, { code: -32601, message: 'Method not found: completion/complete' })
})

t.test('prompts/get, resources/read and completion/complete: the answer, shaped per era', async (t) => {
  const getParams = { name: 'greet', arguments: { who: 'ann' } }
  const rendered = getPrompt(everything, getParams, context)
  t.same((await legacy(everything, 'prompts/get', getParams)).json.result, rendered)
  t.same((await modern(everything, 'prompts/get', getParams, 'greet')).json.result, { resultType: 'complete', ...rendered, _meta: serverMeta })

  const { contents } = await readResource(everything, { uri: 'unit://config' }, context, 'legacy')
  t.same((await legacy(everything, 'resources/read', { uri: 'unit://config' })).json.result, { contents })
  t.same((await modern(everything, 'resources/read', { uri: 'unit://config' }, 'unit://config')).json.result, { resultType: 'complete', contents, ttlMs: 5_000, cacheScope: 'public', _meta: serverMeta })
  const item = await readResource(everything, { uri: 'unit://items/one' }, context, 'modern')
  t.same((await modern(everything, 'resources/read', { uri: 'unit://items/one' }, 'unit://items/one')).json.result, { resultType: 'complete', contents: item.contents, ttlMs: 1_000, cacheScope: 'private', _meta: serverMeta })

  const completeParams = { ref: { type: 'ref/prompt', name: 'greet' }, argument: { name: 'who', value: 'al' } }
  const completion = complete(everything, completeParams, context)
  t.same(completion, { values: ['alice', 'albert'], total: 2, hasMore: false })
  t.same((await legacy(everything, 'completion/complete', completeParams)).json.result, { completion })
  t.same((await modern(everything, 'completion/complete', completeParams)).json.result, { resultType: 'complete', completion, _meta: serverMeta })
})

const state = (status: string, extra: Record<string, unknown> = {}) =>
  ({ status, createdAt: Date.UTC(2026, 0, 1), updatedAt: Date.UTC(2026, 0, 1), ttlMs: null, pollIntervalMs: 500, ...extra }) as unknown as TaskState

t.test('tasks: only in the modern era; a completed task carries its result in tasks/get, not when created', async (t) => {
  tasks.set('done-1', state('completed', { output: { id: 'done-1' } }))
  const created = await modern(taskView, 'tools/call', { name: 'slow', arguments: { id: 'done-1' } }, 'slow', true)
  t.same(created.json.result, {
    resultType: 'task',
    taskId: 'done-1',
    status: 'completed',
    createdAt: '2026-01-01T00:00:00.000Z',
    lastUpdatedAt: '2026-01-01T00:00:00.000Z',
    ttlMs: null,
    pollIntervalMs: 500,
    _meta: serverMeta,
  })
  const got = await modern(taskView, 'tasks/get', { taskId: 'done-1' }, 'done-1', true)
  t.same((got.json.result as Record<string, unknown>).result, { resultType: 'complete', content: [{ type: 'text', text: '{"id":"done-1"}' }], structuredContent: { id: 'done-1' } })
  // the legacy era has no tasks/*, even where a tool has task support
  for (const method of ['tasks/get', 'tasks/update', 'tasks/cancel']) {
    const reply = await legacy(taskView, method, { taskId: 'done-1', _meta: { [CAPS]: { extensions: { [TASKS]: {} } } } })
    t.same(reply.json.error, { code: -32601, message: `Method not found: ${method}` }, method)
  }
})

t.test('outside a tool: a caller’s refusal is invalid params, anything else a logged internal error', async (t) => {
  tasks.set('theirs', 'refuse')
  tasks.set('broken', 'fail')
  const refused = await modern(taskView, 'tasks/get', { taskId: 'theirs' }, 'theirs', true)
  t.same(refused.json, { jsonrpc: '2.0', id: 1, error: { code: -32602, message: 'task theirs is not yours' } })
  t.equal(refused.status, 200)
  t.same(refused.counted, { method: '(error)', tool: '', error: '-32602' })
  const broken = await modern(taskView, 'tasks/get', { taskId: 'broken' }, 'broken', true)
  t.equal((broken.json.error as Record<string, unknown>).code, -32603)
  t.same(broken.counted, { method: '(error)', tool: '', error: '-32603' })
  // a tool that answers with a task it cannot find: Bruno's fault, and the log says which
  lines.length = 0
  const lost = await modern(taskView, 'tools/call', { name: 'slow', arguments: { id: 'nowhere' } }, 'slow', true)
  t.equal((lost.json.error as Record<string, unknown>).code, -32603)
  t.match(JSON.stringify(lines), /tool slow answered with a task it cannot find: nowhere/)
})

t.test('eras read from the request: null _meta is no marker; a handshake with a modern header is modern', async (t) => {
  const nullMeta = await dispatcher.dispatch(promptView, { jsonrpc: '2.0', id: 1, method: 'ping', params: { _meta: null } }, {}, context, log)
  t.same(JSON.parse(nullMeta.payload!.toString()), { jsonrpc: '2.0', id: 1, result: {} })
  const handshake = await dispatcher.dispatch(promptView, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18' } }, { 'mcp-protocol-version': MODERN }, context, log)
  t.same(JSON.parse(handshake.payload!.toString()), { jsonrpc: '2.0', id: 1, error: { code: -32602, message: `Invalid params: _meta["${PV}"] is required and must be a string` } })
})
