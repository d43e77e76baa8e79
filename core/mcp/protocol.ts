/** The protocol revisions Bruno serves: the modern (stateless) one and the legacy handshake ones. */
export const MODERN_VERSIONS = ['2026-07-28'] as const
export const LEGACY_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26'] as const
export const SUPPORTED_VERSIONS: readonly string[] = [...MODERN_VERSIONS, ...LEGACY_VERSIONS]

/** Per-request `_meta` keys of the modern era. */
export const META = {
  protocolVersion: 'io.modelcontextprotocol/protocolVersion',
  clientCapabilities: 'io.modelcontextprotocol/clientCapabilities',
  clientInfo: 'io.modelcontextprotocol/clientInfo',
  serverInfo: 'io.modelcontextprotocol/serverInfo',
} as const

/** Methods whose `Mcp-Name` header mirrors a body field (the Tasks extension's methods name the task). */
export const NAMED_METHODS: Readonly<Record<string, 'name' | 'uri' | 'taskId'>> = {
  'tools/call': 'name',
  'prompts/get': 'name',
  'resources/read': 'uri',
  'tasks/get': 'taskId',
  'tasks/update': 'taskId',
  'tasks/cancel': 'taskId',
}

/** How long a client may keep a `tools/list`, `prompts/list`, `resources/list` or `resources/templates/list` (they change only with a deployment). */
export const LIST_TTL_MS = 86_400_000
/** How long a client may keep `server/discover`. */
export const DISCOVER_TTL_MS = 3_600_000

const SENTINEL = /^=\?base64\?([A-Za-z0-9+/]*={0,2})\?=$/

/**
 * Decodes a header value that may use the Base64 sentinel form (`=?base64?…?=`).
 * Returns `undefined` for a sentinel whose payload is not valid Base64 of UTF-8.
 *
 * @example
 * decodeHeaderValue('=?base64?SGVsbG8=?=') // 'Hello'
 * decodeHeaderValue('get_weather')         // 'get_weather'
 */
export function decodeHeaderValue(value: string): string | undefined {
  if (!value.startsWith('=?base64?')) return value
  const match = SENTINEL.exec(value)
  if (!match || match[1]!.length % 4 !== 0) return undefined
  const bytes = Buffer.from(match[1]!, 'base64')
  const text = new TextDecoder('utf-8', { fatal: true })
  try {
    return text.decode(bytes)
  } catch {
    return undefined
  }
}
