/** The modern era's per-request `_meta`, as a conforming client sends it. */
export function modernMeta(version = '2026-07-28', capabilities: object = {}) {
  return {
    'io.modelcontextprotocol/protocolVersion': version,
    'io.modelcontextprotocol/clientCapabilities': capabilities,
    'io.modelcontextprotocol/clientInfo': { name: 'bruno-testing', version: '0.0.0' },
  }
}

/** What came back from a POST: the status, headers, raw text and parsed body. */
export interface RawReply {
  readonly status: number
  readonly headers: Headers
  readonly text: string
  /** The parsed body, or undefined for an empty one. */
  readonly json: any
}

/**
 * POSTs a body as-is (object → JSON) with the given headers; reads whatever comes back.
 *
 * @example
 * const reply = await postRaw(`${url}/mcp`, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: modernMeta() } }, modernHeaders('tools/list'))
 */
export async function postRaw(url: string, body: unknown, headers: Record<string, string> = {}): Promise<RawReply> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  })
  const text = await response.text()
  return { status: response.status, headers: response.headers, text, json: text ? JSON.parse(text) : undefined }
}

/** Headers a conforming modern client sends for a request. */
export function modernHeaders(method: string, name?: string, version = '2026-07-28'): Record<string, string> {
  return { 'mcp-protocol-version': version, 'mcp-method': method, ...(name === undefined ? {} : { 'mcp-name': name }) }
}

/**
 * A minimal MCP client of the modern (stateless) era for a group's tests: `tools/list`,
 * `tools/call` and `resources/read` on a served Bruno, no session, no SDK.
 *
 * @example
 * const mcp = new McpToolClient(`${served.mcpUrl}/bruno,my-group`)
 * const batch = await mcp.call('my_batch', { chain: 'local', account, calls, token: 'USDC' })
 */
export class McpToolClient {
  #id = 0

  /** `capabilities`: the client capabilities each request declares (e.g. an extension's). */
  constructor(
    readonly url: string,
    readonly capabilities: object = {},
  ) {}

  /** One JSON-RPC request, with the modern era's `_meta` and headers. */
  async request(method: string, params: Record<string, unknown> = {}, name?: string): Promise<RawReply> {
    return postRaw(this.url, { jsonrpc: '2.0', id: ++this.#id, method, params: { ...params, _meta: modernMeta('2026-07-28', this.capabilities) } }, modernHeaders(method, name))
  }

  async listTools(): Promise<any[]> {
    const reply = await this.request('tools/list')
    if (reply.status !== 200 || !reply.json.result) throw new Error(`tools/list failed: ${reply.text}`)
    return reply.json.result.tools
  }

  /** Calls a tool; returns the `CallToolResult`, a refusal (`isError`) included. */
  async callTool(name: string, args: Record<string, unknown>): Promise<any> {
    const reply = await this.request('tools/call', { name, arguments: args }, name)
    if (reply.status !== 200 || !reply.json.result) throw new Error(`tools/call ${name} failed: ${reply.text}`)
    return reply.json.result
  }

  /** Calls a tool that must succeed; returns its structured result, or throws with the refusal's words. */
  async call(name: string, args: Record<string, unknown>): Promise<any> {
    const result = await this.callTool(name, args)
    if (result.isError) throw new Error(`${name} refused: ${result.content[0].text}`)
    return result.structuredContent
  }

  /**
   * Reads a resource; returns its text (the first content's). `bruno://<chain>/config` says what the
   * deployment runs on a chain: its Runner, payee, tokens, and each served delegate's address.
   *
   * @example
   * const { delegates } = JSON.parse(await mcp.readResource('bruno://local/config')) // [{ name: 'Calibur', address: '0x0000…030e' }, …]
   */
  async readResource(uri: string): Promise<string> {
    const reply = await this.request('resources/read', { uri }, uri)
    const text = reply.json?.result?.contents?.[0]?.text
    if (reply.status !== 200 || typeof text !== 'string') throw new Error(`resources/read ${uri} failed: ${reply.text}`)
    return text
  }
}
