/**
 * The MCP endpoint an agent is configured with: Bruno's URL, `/mcp`, and the groups if some are
 * named (`/mcp/<group>,<group>`), so the agent carries only those groups' tools. A URL that
 * already ends in `/mcp` is taken as the endpoint.
 *
 * @example
 * mcpEndpoint('https://bruno.example.com', ['erc20', 'uniswap']) // 'https://bruno.example.com/mcp/erc20,uniswap'
 */
export function mcpEndpoint(brunoUrl: string, groups: readonly string[]): string {
  const url = new URL(brunoUrl)
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`--url: ${brunoUrl} is not an http(s) URL`)
  if (url.search || url.hash) throw new Error('--url: give Bruno\'s base URL, without a query or fragment')
  const base = url.href.replace(/\/+$/, '')
  const mcp = base.endsWith('/mcp') ? base : `${base}/mcp`
  return groups.length === 0 ? mcp : `${mcp}/${groups.join(',')}`
}
