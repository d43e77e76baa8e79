/** JSON-RPC 2.0 and MCP error codes, one place, so every transport maps errors the same way. */
export const ErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  HeaderMismatch: -32020,
  MissingRequiredClientCapability: -32021,
  UnsupportedProtocolVersion: -32022,
} as const

export type RequestId = string | number

/** An error to answer with: its JSON-RPC code and message, the HTTP status that carries it. */
export class JsonRpcError extends Error {
  override readonly name = 'JsonRpcError'
  constructor(
    readonly code: number,
    message: string,
    readonly status: number,
    readonly data?: unknown,
  ) {
    super(message)
  }
}

/** `{"jsonrpc":"2.0","id":…,"result":…}` with an already serialized result. */
export function resultPayload(id: RequestId, resultJson: string): string {
  return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${resultJson}}`
}

/**
 * A result answer from a result serialized and UTF-8 encoded once (the cached lists and
 * discovery): the shared bytes `{"jsonrpc":"2.0","result":<result>`, then `,"id":<id>}`. JSON's
 * member order is free, so the id can follow the result, and the answer is written from the cache
 * with neither a copy nor a buffer per answer: a copy of the 32 KB tool list per `tools/list` cost
 * a fifth of its time in garbage collection (bench/RESULTS.md).
 *
 * @example
 * const head = cachedResultHead('{"tools":[]}')
 * cachedResult(7, head).toString() // '{"jsonrpc":"2.0","result":{"tools":[]},"id":7}'
 */
export class CachedResultAnswer {
  constructor(
    /** Shared by every answer of this result: never written to. */
    readonly head: Buffer,
    readonly tail: string,
  ) {}

  get byteLength(): number {
    return this.head.length + Buffer.byteLength(this.tail)
  }

  toString(): string {
    return this.head.toString() + this.tail
  }
}

/** The bytes every answer of `resultJson` starts with, for `cachedResult`. */
export function cachedResultHead(resultJson: string): Buffer {
  return Buffer.from(`{"jsonrpc":"2.0","result":${resultJson}`)
}

/** The answer to request `id` whose result's bytes start `head` (`cachedResultHead`). */
export function cachedResult(id: RequestId, head: Buffer): CachedResultAnswer {
  return new CachedResultAnswer(head, `,"id":${JSON.stringify(id)}}`)
}

/** An error response; `id` is omitted when the request's id could not be read. */
export function errorPayload(id: RequestId | undefined, error: { code: number; message: string; data?: unknown }): string {
  const body: Record<string, unknown> = { jsonrpc: '2.0' }
  if (id !== undefined) body.id = id
  body.error = error.data === undefined ? { code: error.code, message: error.message } : { code: error.code, message: error.message, data: error.data }
  return JSON.stringify(body)
}
