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

const RESULT_HEAD = Buffer.from('{"jsonrpc":"2.0","id":')
const RESULT_FIELD = Buffer.from(',"result":')

/**
 * `resultPayload` for a result serialized and UTF-8 encoded once (the cached lists and
 * discovery): one copy of its bytes per answer, instead of encoding the whole string again.
 *
 * @example
 * resultBytes(7, Buffer.from('{"tools":[]}')).toString() // '{"jsonrpc":"2.0","id":7,"result":{"tools":[]}}'
 */
export function resultBytes(id: RequestId, result: Buffer): Buffer {
  const idJson = JSON.stringify(id)
  const bytes = Buffer.allocUnsafe(RESULT_HEAD.length + Buffer.byteLength(idJson) + RESULT_FIELD.length + result.length + 1)
  let at = RESULT_HEAD.copy(bytes, 0)
  at += bytes.write(idJson, at)
  at += RESULT_FIELD.copy(bytes, at)
  at += result.copy(bytes, at)
  bytes[at] = 0x7d // }
  return bytes
}

/** An error response; `id` is omitted when the request's id could not be read. */
export function errorPayload(id: RequestId | undefined, error: { code: number; message: string; data?: unknown }): string {
  const body: Record<string, unknown> = { jsonrpc: '2.0' }
  if (id !== undefined) body.id = id
  body.error = error.data === undefined ? { code: error.code, message: error.message } : { code: error.code, message: error.message, data: error.data }
  return JSON.stringify(body)
}
