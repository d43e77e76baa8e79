/** The agents whose MCP configuration `bruno setup` writes. */
export const CLIENT_NAMES = ['claude', 'cursor', 'vscode', 'codex', 'gemini'] as const
export type ClientName = (typeof CLIENT_NAMES)[number]

/** Where and how one agent reads its project's MCP servers. */
export interface ClientConfigFile {
  readonly client: ClientName
  /** Relative to the project directory. */
  readonly path: string
  readonly format: 'json' | 'toml'
  /** The object (JSON) or table (TOML) that holds the servers by name. */
  readonly container: string
  /** The server entry for an MCP endpoint URL, in the client's own vocabulary. */
  entry(url: string): Record<string, string>
}

/**
 * Each agent's project-level MCP config, as each documents it:
 * - Claude Code `.mcp.json`: `mcpServers`, `{ type: "http", url }`;
 * - Cursor `.cursor/mcp.json`: `mcpServers`, `{ url }` (Streamable HTTP);
 * - VS Code `.vscode/mcp.json`: `servers` (not `mcpServers`), `{ type: "http", url }`;
 * - Codex `.codex/config.toml`: table `[mcp_servers.<name>]` with `url` (read in trusted projects);
 * - Gemini CLI `.gemini/settings.json`: `mcpServers`, `{ httpUrl }` (its `url` means SSE).
 *
 * @example
 * CLIENTS.vscode.entry('http://127.0.0.1:3030/mcp') // { type: 'http', url: 'http://127.0.0.1:3030/mcp' }
 */
export const CLIENTS: Readonly<Record<ClientName, ClientConfigFile>> = {
  claude: { client: 'claude', path: '.mcp.json', format: 'json', container: 'mcpServers', entry: (url) => ({ type: 'http', url }) },
  cursor: { client: 'cursor', path: '.cursor/mcp.json', format: 'json', container: 'mcpServers', entry: (url) => ({ url }) },
  vscode: { client: 'vscode', path: '.vscode/mcp.json', format: 'json', container: 'servers', entry: (url) => ({ type: 'http', url }) },
  codex: { client: 'codex', path: '.codex/config.toml', format: 'toml', container: 'mcp_servers', entry: (url) => ({ url }) },
  gemini: { client: 'gemini', path: '.gemini/settings.json', format: 'json', container: 'mcpServers', entry: (url) => ({ httpUrl: url }) },
}
