import type { FastifyBaseLogger } from 'fastify'
import type { IncomingHttpHeaders } from 'node:http'
import type { RegisteredTool, RegistryView } from '../registry.ts'
import type { ToolContext } from '../tool/tool.ts'
import { blameOf, reportFault } from '../chain/faults.ts'
import { callTool, internalError, type ToolOutcome } from './callTool.ts'
import { complete } from './complete.ts'
import { getPrompt } from './getPrompt.ts'
import { ErrorCode, JsonRpcError, errorPayload, cachedResult, cachedResultHead, resultPayload, type CachedResultAnswer, type RequestId } from '../http/jsonrpc.ts'
import {
  DISCOVER_TTL_MS,
  LEGACY_VERSIONS,
  LIST_TTL_MS,
  META,
  MODERN_VERSIONS,
  NAMED_METHODS,
  SUPPORTED_VERSIONS,
  decodeHeaderValue,
} from './protocol.ts'
import { readResource } from './readResource.ts'
import { TASKS_EXTENSION, declaresTasks, findTask, taskFields, taskTools } from './tasks.ts'
import { UI_EXTENSION, declaresUi } from './ui.ts'

/** What the HTTP layer sends: a status and, unless 202, a JSON body; and what the request counts as. */
export interface McpReply {
  readonly status: number
  readonly payload?: string | CachedResultAnswer
  readonly counted: McpCount
}

/**
 * A request as the metrics count it. Only an answered request lends its method, and only a called
 * tool that exists its name: a refused body's are the caller's free text, and would grow the
 * series without bound.
 */
export interface McpCount {
  /** The JSON-RPC method answered, `(error)` for a JSON-RPC error, `(notification)` for a notification. */
  readonly method: string
  /** The tool of an answered `tools/call`, else empty. */
  readonly tool: string
  /** The JSON-RPC error code, or `tool` for a tool result with `isError`. */
  readonly error?: string
}

type Answer = Omit<McpReply, 'status'> & { readonly payload: string | CachedResultAnswer }

export interface ServerInfo {
  readonly name: string
  readonly version: string
}

interface Request {
  readonly id: RequestId
  readonly method: string
  readonly params: Record<string, unknown>
}

type Era = 'modern' | 'legacy'

const LEGACY = new Set<string>(LEGACY_VERSIONS)
const MODERN = new Set<string>(MODERN_VERSIONS)
const LATEST_LEGACY = LEGACY_VERSIONS[0]

/**
 * The MCP binding of one path: answers a parsed JSON-RPC body with a status and payload.
 * Both eras are served on the same endpoint; the era is read from each request itself
 * (modern `_meta`, or the legacy handshake and its version header).
 */
export class McpDispatcher {
  readonly #serverInfo: ServerInfo
  readonly #metaJson: string
  readonly #cache = new WeakMap<RegistryView, CachedAnswers>()

  constructor(serverInfo: ServerInfo) {
    this.#serverInfo = serverInfo
    this.#metaJson = JSON.stringify({ [META.serverInfo]: serverInfo })
  }

  async dispatch(view: RegistryView, body: unknown, headers: IncomingHttpHeaders, context: ToolContext, log: FastifyBaseLogger): Promise<McpReply> {
    let id: RequestId | undefined
    try {
      const envelope = readEnvelope(body)
      if (envelope === 'notification') return { status: 202, counted: NOTIFICATION }
      id = envelope.id
      const request = { ...envelope, params: readParams(envelope.params) }
      const era = eraOf(request, headers)
      if (era === 'modern') checkModern(request, headers)
      else checkLegacyHeader(headers)
      return { status: 200, ...(await this.#answer(era, view, request, context, log)) }
    } catch (error) {
      if (error instanceof JsonRpcError) return { status: error.status, payload: errorPayload(id, error), counted: errorCount(error.code) }
      // Outside a tool (a task's state, a resource): a refusal is invalid params, anything else a
      // fault answered as callTool answers one (-32603, logged once with its correlation id).
      const blame = blameOf(error)
      const answer = blame.side === 'caller' ? new JsonRpcError(ErrorCode.InvalidParams, blame.message, 200) : internalError(reportFault(log, error, blame))
      return { status: answer.status, payload: errorPayload(id, answer), counted: errorCount(answer.code) }
    }
  }

  async #answer(era: Era, view: RegistryView, request: Request, context: ToolContext, log: FastifyBaseLogger): Promise<Answer> {
    const cached = this.#cached(view)
    const capabilities = cached.capabilities
    switch (request.method) {
      case 'tools/list':
        // App-only tools go only to a caller that says it shows views (a modern request's own
        // capabilities); a 2025 request carries none, so it gets the model's list.
        return answered(request, cachedResult(request.id, era === 'modern' && declaresUi(request.params) ? cached.toolsForApps : cached.lists.tools[era]))
      case 'tools/call':
        return this.#toolsCall(era, view, request, context, log)
      case 'prompts/list':
        if (capabilities.prompts) return answered(request, cachedResult(request.id, cached.lists.prompts[era]))
        break
      case 'prompts/get':
        if (capabilities.prompts) return answered(request, resultPayload(request.id, this.#result(era, getPrompt(view, request.params, context))))
        break
      case 'resources/list':
        if (capabilities.resources) return answered(request, cachedResult(request.id, cached.lists.resources[era]))
        break
      case 'resources/templates/list':
        if (capabilities.resources) return answered(request, cachedResult(request.id, cached.lists.templates[era]))
        break
      case 'resources/read':
        if (capabilities.resources) return answered(request, resultPayload(request.id, await this.#readResource(era, view, request, context)))
        break
      case 'completion/complete':
        if (capabilities.completions) return answered(request, resultPayload(request.id, this.#result(era, { completion: complete(view, request.params, context) })))
        break
      // The Tasks extension exists only in the modern era (SEP-2663: a 2025 client's declaration enables nothing).
      case 'tasks/get':
        if (era === 'modern' && cached.taskTools.length > 0) {
          const { taskId, state } = await findTask(view, request.params, context)
          return answered(request, resultPayload(request.id, this.#result(era, taskFields(taskId, state, true))))
        }
        break
      case 'tasks/update':
      case 'tasks/cancel':
        // Acknowledged and otherwise ignored: a submission asks no input, and one the runner holds
        // cannot be withdrawn (its signed payment is already out of the account's hands).
        if (era === 'modern' && cached.taskTools.length > 0) {
          await findTask(view, request.params, context)
          return answered(request, resultPayload(request.id, this.#result(era, {})))
        }
        break
      case 'server/discover':
        if (era === 'modern') return answered(request, cachedResult(request.id, cached.discover))
        break
      case 'initialize':
        if (era === 'legacy') return answered(request, cachedResult(request.id, this.#initialize(view, request, cached.initialize)))
        break
      case 'ping':
        if (era === 'legacy') return answered(request, resultPayload(request.id, '{}'))
        break
    }
    throw new JsonRpcError(ErrorCode.MethodNotFound, `Method not found: ${request.method}`, era === 'modern' ? 404 : 200)
  }

  /**
   * A tool call's result; for a modern caller that declares the Tasks extension, a tool with task
   * support answers with a `CreateTaskResult` instead (its refusals stay ordinary results: no task
   * exists for them).
   */
  async #toolsCall(era: Era, view: RegistryView, request: Request, context: ToolContext, log: FastifyBaseLogger): Promise<Answer> {
    const { name, arguments: args = {} } = request.params
    if (typeof name !== 'string') throw new JsonRpcError(ErrorCode.InvalidParams, 'Invalid params: "name" must be a string', 200)
    const tool = view.tools.get(name)
    if (!tool) throw new JsonRpcError(ErrorCode.InvalidParams, `Unknown tool: ${name}`, 200)
    // The request's own logger: callTool names the tool in the one line it writes, and a child
    // logger per call cost a fifth of a tools/call's CPU when measured (pino serializes its bindings).
    const outcome = await callTool(tool, args, context, log)
    const counted: McpCount = outcome.isError ? { method: request.method, tool: name, error: 'tool' } : { method: request.method, tool: name }
    const task = tool.definition.task
    if (era === 'modern' && task && !outcome.isError && declaresTasks(request.params)) {
      return { payload: resultPayload(request.id, await this.#createTaskResult(tool, task.idOf(outcome.structuredContent), context)), counted }
    }
    return { payload: resultPayload(request.id, this.#callResult(era, outcome)), counted }
  }

  async #createTaskResult(tool: RegisteredTool, taskId: string, context: ToolContext): Promise<string> {
    // The task is the stored work the output names: it resolves in tasks/get from now on.
    const state = await tool.definition.task!.state(taskId, context)
    if (!state) throw new Error(`tool ${tool.definition.name} answered with a task it cannot find: ${taskId}`)
    return this.#result('modern', taskFields(taskId, state, false), 'task')
  }

  async #readResource(era: Era, view: RegistryView, request: Request, context: ToolContext): Promise<string> {
    const { contents, cache } = await readResource(view, request.params, context, era)
    return this.#result(era, { contents, ...(era === 'modern' ? { ttlMs: cache.ttlMs, cacheScope: cache.scope } : {}) })
  }

  /** A result object as the era shapes it: the modern one adds `resultType` and serverInfo. */
  #result(era: Era, result: object, resultType: 'complete' | 'task' = 'complete'): string {
    const json = JSON.stringify(result)
    if (era === 'legacy') return json
    const fields = json.length > 2 ? `${json.slice(1, -1)},` : ''
    return `{"resultType":"${resultType}",${fields}"_meta":${this.#metaJson}}`
  }

  #callResult(era: Era, outcome: ToolOutcome): string {
    const content = `"content":[{"type":"text","text":${JSON.stringify(outcome.text)}}]`
    const body = outcome.isError ? `${content},"isError":true` : `${content},"structuredContent":${outcome.text}`
    return era === 'modern' ? `{"resultType":"complete",${body},"_meta":${this.#metaJson}}` : `{${body}}`
  }

  #initialize(view: RegistryView, request: Request, answers: Map<string, Buffer>): Buffer {
    const requested = request.params.protocolVersion
    const version = typeof requested === 'string' && LEGACY.has(requested) ? requested : LATEST_LEGACY
    let answer = answers.get(version)
    if (!answer) {
      answer = cachedResultHead(JSON.stringify({ protocolVersion: version, capabilities: capabilitiesOf(view, 'legacy'), serverInfo: this.#serverInfo, instructions: view.instructions }))
      answers.set(version, answer)
    }
    return answer
  }

  #cached(view: RegistryView): CachedAnswers {
    let cached = this.#cache.get(view)
    if (!cached) {
      const list = (key: string, json: string) => ({
        modern: cachedResultHead(`{"resultType":"complete","${key}":${json},"ttlMs":${LIST_TTL_MS},"cacheScope":"public","_meta":${this.#metaJson}}`),
        legacy: cachedResultHead(`{"${key}":${json}}`),
      })
      cached = {
        capabilities: capabilitiesOf(view, 'legacy'),
        taskTools: taskTools(view),
        toolsForApps: list('tools', view.toolsJsonForApps).modern,
        lists: {
          tools: list('tools', view.toolsJson),
          prompts: list('prompts', view.promptsJson),
          resources: list('resources', view.resourcesJson),
          templates: list('resourceTemplates', view.templatesJson),
        },
        discover: cachedResultHead(
          JSON.stringify({
            resultType: 'complete',
            supportedVersions: SUPPORTED_VERSIONS,
            capabilities: capabilitiesOf(view, 'modern'),
            instructions: view.instructions,
            ttlMs: DISCOVER_TTL_MS,
            cacheScope: 'public',
            _meta: { [META.serverInfo]: this.#serverInfo },
          }),
        ),
        initialize: new Map(),
      }
      this.#cache.set(view, cached)
    }
    return cached
  }
}

interface CachedAnswers {
  /** What the path serves besides tools (the legacy form: no extensions). */
  readonly capabilities: Capabilities
  readonly taskTools: readonly RegisteredTool[]
  /** The modern `tools/list` for a caller that declares MCP Apps: the app-only tools too. */
  readonly toolsForApps: Buffer
  /** Each list's answer up to its id (`cachedResultHead`), serialized and UTF-8 encoded once per era. */
  readonly lists: Record<'tools' | 'prompts' | 'resources' | 'templates', Record<Era, Buffer>>
  readonly discover: Buffer
  readonly initialize: Map<string, Buffer>
}

interface Capabilities {
  tools: { listChanged: false }
  prompts?: { listChanged: false }
  resources?: { listChanged: false }
  completions?: Record<string, never>
  extensions?: Record<string, Record<string, never>>
}

/**
 * What a path advertises: tools always; prompts, resources and completions only where it serves
 * some (a tool's `ui://` view is a resource); in the modern era only (2025 capabilities have no
 * `extensions`), the Tasks extension where a tool can answer with a task and MCP Apps where a
 * tool names a view.
 */
function capabilitiesOf(view: RegistryView, era: Era): Capabilities {
  const capabilities: Capabilities = { tools: { listChanged: false } }
  if (view.prompts.size > 0) capabilities.prompts = { listChanged: false }
  if (view.resources.size > 0 || view.templates.length > 0 || view.views.size > 0) capabilities.resources = { listChanged: false }
  if (view.prompts.size > 0 || view.templates.length > 0) capabilities.completions = {}
  if (era === 'modern') {
    const extensions = {
      ...(taskTools(view).length > 0 ? { [TASKS_EXTENSION]: {} } : {}),
      ...(view.views.size > 0 ? { [UI_EXTENSION]: {} } : {}),
    }
    if (Object.keys(extensions).length > 0) capabilities.extensions = extensions
  }
  return capabilities
}

/** An answer that counts as its method. (A function, not a closure made per request: it is on every request's path.) */
function answered(request: Request, payload: string | CachedResultAnswer): Answer {
  return { payload, counted: { method: request.method, tool: '' } }
}

const NOTIFICATION: McpCount = { method: '(notification)', tool: '' }

function errorCount(code: number): McpCount {
  return { method: '(error)', tool: '', error: String(code) }
}

/** The request (its `params` unread), or `'notification'` for a message without an id (answered 202, whatever it says). */
function readEnvelope(body: unknown): (Omit<Request, 'params'> & { readonly params: unknown }) | 'notification' {
  if (Array.isArray(body)) throw new JsonRpcError(ErrorCode.InvalidRequest, 'Invalid Request: batches are not supported', 400)
  if (typeof body !== 'object' || body === null) throw new JsonRpcError(ErrorCode.InvalidRequest, 'Invalid Request: the body must be a JSON-RPC object', 400)
  const message = body as Record<string, unknown>
  if (message.jsonrpc !== '2.0') throw new JsonRpcError(ErrorCode.InvalidRequest, 'Invalid Request: "jsonrpc" must be "2.0"', 400)
  if (typeof message.method !== 'string') {
    const isResponse = 'result' in message || 'error' in message
    throw new JsonRpcError(ErrorCode.InvalidRequest, isResponse ? 'Invalid Request: a server takes no responses' : 'Invalid Request: "method" must be a string', 400)
  }
  if (!('id' in message)) return 'notification'
  const { id } = message
  if (typeof id !== 'string' && !(typeof id === 'number' && Number.isInteger(id))) {
    throw new JsonRpcError(ErrorCode.InvalidRequest, 'Invalid Request: "id" must be a string or an integer', 400)
  }
  return { id, method: message.method, params: message.params }
}

/** A request's `params`, read after its id so that a refusal of them answers to that id. */
function readParams(params: unknown): Record<string, unknown> {
  if (params === undefined || params === null) return {}
  if (typeof params !== 'object' || Array.isArray(params)) throw new JsonRpcError(ErrorCode.InvalidParams, 'Invalid params: "params" must be an object', 400)
  return params as Record<string, unknown>
}

/**
 * Modern when the body carries the per-request protocol version; legacy for a request whose
 * version header is absent or a legacy revision. A modern version header over a body without
 * `_meta` is a malformed modern request, not a legacy one. `initialize` is read like any other
 * request: a 2025 handshake (no modern `_meta`, no modern version header) is legacy and answered;
 * one that names 2026-07-28 is modern, where the method was removed (404, -32601, like `ping`).
 */
function eraOf(request: Request, headers: IncomingHttpHeaders): Era {
  const meta = request.params._meta
  if (typeof meta === 'object' && meta !== null && META.protocolVersion in meta) return 'modern'
  const header = headers['mcp-protocol-version']
  // A 2025 handshake is legacy whatever else its header says (an unknown version is then -32022).
  if (request.method === 'initialize') return typeof header === 'string' && MODERN.has(header) ? 'modern' : 'legacy'
  return header === undefined || (typeof header === 'string' && LEGACY.has(header)) ? 'legacy' : 'modern'
}

function checkModern(request: Request, headers: IncomingHttpHeaders): void {
  const meta = request.params._meta as Record<string, unknown> | undefined
  const version = meta?.[META.protocolVersion]
  if (typeof version !== 'string') throw invalidMeta(`_meta["${META.protocolVersion}"] is required and must be a string`)
  const capabilities = meta?.[META.clientCapabilities]
  if (typeof capabilities !== 'object' || capabilities === null || Array.isArray(capabilities)) {
    throw invalidMeta(`_meta["${META.clientCapabilities}"] is required and must be an object`)
  }
  expectHeader(headers, 'mcp-protocol-version', 'MCP-Protocol-Version', version)
  expectHeader(headers, 'mcp-method', 'Mcp-Method', request.method)
  const namedBy = NAMED_METHODS[request.method]
  const named = namedBy && request.params[namedBy]
  if (typeof named === 'string') expectHeader(headers, 'mcp-name', 'Mcp-Name', named, decodeHeaderValue)
  if (!MODERN.has(version)) {
    throw new JsonRpcError(ErrorCode.UnsupportedProtocolVersion, 'Unsupported protocol version', 400, { supported: SUPPORTED_VERSIONS, requested: version })
  }
}

/** A legacy request after the handshake names its version in the header; an unknown one is refused. */
function checkLegacyHeader(headers: IncomingHttpHeaders): void {
  const header = headers['mcp-protocol-version']
  if (header !== undefined && !(typeof header === 'string' && LEGACY.has(header))) {
    throw new JsonRpcError(ErrorCode.UnsupportedProtocolVersion, 'Unsupported protocol version', 400, { supported: SUPPORTED_VERSIONS, requested: header })
  }
}

function expectHeader(
  headers: IncomingHttpHeaders,
  key: string,
  label: string,
  expected: string,
  decode: (value: string) => string | undefined = (value) => value,
): void {
  const raw = headers[key]
  if (raw === undefined) throw headerMismatch(`${label} header is required`)
  const value = typeof raw === 'string' ? decode(raw) : undefined
  if (value === undefined) throw headerMismatch(`${label} header is malformed`)
  if (value !== expected) throw headerMismatch(`${label} header value ${JSON.stringify(value)} does not match body value ${JSON.stringify(expected)}`)
}

function headerMismatch(detail: string): JsonRpcError {
  return new JsonRpcError(ErrorCode.HeaderMismatch, `Header mismatch: ${detail}`, 400)
}

function invalidMeta(detail: string): JsonRpcError {
  return new JsonRpcError(ErrorCode.InvalidParams, `Invalid params: ${detail}`, 400)
}
