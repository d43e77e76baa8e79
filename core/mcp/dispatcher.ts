import type { FastifyBaseLogger } from 'fastify'
import type { IncomingHttpHeaders } from 'node:http'
import type { RegistryView } from '../registry.ts'
import type { ToolContext } from '../tool.ts'
import { callTool, type ToolOutcome } from './callTool.ts'
import { ErrorCode, JsonRpcError, errorPayload, resultPayload, type RequestId } from './jsonrpc.ts'
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

/** What the HTTP layer sends: a status and, unless 202, a JSON body. */
export interface McpReply {
  readonly status: number
  readonly payload?: string
}

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
  readonly #cache = new WeakMap<RegistryView, { modernList: string; legacyList: string; discover: string; initialize: Map<string, string> }>()

  constructor(serverInfo: ServerInfo) {
    this.#serverInfo = serverInfo
    this.#metaJson = JSON.stringify({ [META.serverInfo]: serverInfo })
  }

  async dispatch(view: RegistryView, body: unknown, headers: IncomingHttpHeaders, context: ToolContext, log: FastifyBaseLogger): Promise<McpReply> {
    let id: RequestId | undefined
    try {
      const envelope = readEnvelope(body)
      if (envelope === 'notification') return { status: 202 }
      id = envelope.id
      const era = eraOf(envelope, headers)
      if (era === 'modern') checkModern(envelope, headers)
      else checkLegacyHeader(headers)
      return { status: 200, payload: await this.#answer(era, view, envelope, context, log) }
    } catch (error) {
      if (error instanceof JsonRpcError) return { status: error.status, payload: errorPayload(id, error) }
      log.error({ err: error }, 'internal error answering an MCP request')
      return { status: 500, payload: errorPayload(id, { code: ErrorCode.InternalError, message: 'Internal error' }) }
    }
  }

  async #answer(era: Era, view: RegistryView, request: Request, context: ToolContext, log: FastifyBaseLogger): Promise<string> {
    const cached = this.#cached(view)
    switch (request.method) {
      case 'tools/list':
        return resultPayload(request.id, era === 'modern' ? cached.modernList : cached.legacyList)
      case 'tools/call':
        return resultPayload(request.id, this.#callResult(era, await this.#callTool(view, request, context, log)))
      case 'server/discover':
        if (era === 'modern') return resultPayload(request.id, cached.discover)
        break
      case 'initialize':
        if (era === 'legacy') return resultPayload(request.id, this.#initialize(view, request, cached.initialize))
        break
      case 'ping':
        if (era === 'legacy') return resultPayload(request.id, '{}')
        break
    }
    throw new JsonRpcError(ErrorCode.MethodNotFound, `Method not found: ${request.method}`, era === 'modern' ? 404 : 200)
  }

  async #callTool(view: RegistryView, request: Request, context: ToolContext, log: FastifyBaseLogger): Promise<ToolOutcome> {
    const { name, arguments: args = {} } = request.params
    if (typeof name !== 'string') throw new JsonRpcError(ErrorCode.InvalidParams, 'Invalid params: "name" must be a string', 200)
    const tool = view.tools.get(name)
    if (!tool) throw new JsonRpcError(ErrorCode.InvalidParams, `Unknown tool: ${name}`, 200)
    return callTool(tool, args, context, log.child({ tool: name }))
  }

  #callResult(era: Era, outcome: ToolOutcome): string {
    const content = `"content":[{"type":"text","text":${JSON.stringify(outcome.text)}}]`
    const body = outcome.isError ? `${content},"isError":true` : `${content},"structuredContent":${outcome.text}`
    return era === 'modern' ? `{"resultType":"complete",${body},"_meta":${this.#metaJson}}` : `{${body}}`
  }

  #initialize(view: RegistryView, request: Request, answers: Map<string, string>): string {
    const requested = request.params.protocolVersion
    const version = typeof requested === 'string' && LEGACY.has(requested) ? requested : LATEST_LEGACY
    let answer = answers.get(version)
    if (!answer) {
      answer = JSON.stringify({ protocolVersion: version, capabilities: capabilities(), serverInfo: this.#serverInfo, instructions: view.instructions })
      answers.set(version, answer)
    }
    return answer
  }

  #cached(view: RegistryView) {
    let cached = this.#cache.get(view)
    if (!cached) {
      cached = {
        modernList: `{"resultType":"complete","tools":${view.toolsJson},"ttlMs":${LIST_TTL_MS},"cacheScope":"public","_meta":${this.#metaJson}}`,
        legacyList: `{"tools":${view.toolsJson}}`,
        discover: JSON.stringify({
          resultType: 'complete',
          supportedVersions: SUPPORTED_VERSIONS,
          capabilities: capabilities(),
          instructions: view.instructions,
          ttlMs: DISCOVER_TTL_MS,
          cacheScope: 'public',
          _meta: { [META.serverInfo]: this.#serverInfo },
        }),
        initialize: new Map(),
      }
      this.#cache.set(view, cached)
    }
    return cached
  }
}

function capabilities() {
  return { tools: { listChanged: false } }
}

/** The request, or `'notification'` for a message without an id (answered 202, whatever it says). */
function readEnvelope(body: unknown): Request | 'notification' {
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
  const params = message.params ?? {}
  if (typeof params !== 'object' || params === null || Array.isArray(params)) {
    throw new JsonRpcError(ErrorCode.InvalidParams, 'Invalid params: "params" must be an object', 400)
  }
  return { id, method: message.method, params: params as Record<string, unknown> }
}

/**
 * Modern when the body carries the per-request protocol version; legacy for `initialize` and for
 * a request whose version header is absent or a legacy revision. A modern version header over a
 * body without `_meta` is a malformed modern request, not a legacy one.
 */
function eraOf(request: Request, headers: IncomingHttpHeaders): Era {
  if (request.method === 'initialize') return 'legacy'
  const meta = request.params._meta
  if (typeof meta === 'object' && meta !== null && META.protocolVersion in meta) return 'modern'
  const header = headers['mcp-protocol-version']
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
