import t from 'tap'
import { startDevnetBruno } from './fixtures/devnetBruno.ts'
import { postRaw, modernHeaders, modernMeta } from './fixtures/mcpHttp.ts'

// Issue 15: the full tools/list stays light enough for an agent's context. Every tool keeps
// an outputSchema; shared shapes are described once, in the group's instructions. Issue 49, point 4:
// the default groups' list within 28 KB (typed data to sign published as the object it is, its
// shape in the instructions; one tool's shape named by another instead of repeated).

const LIMIT = 28_672
// The default config's groups (a config file's `groups` default); the devnet serves metamask too.
const DEFAULT_GROUPS = '/mcp/bruno,calibur,3009,erc20,uniswap'
const PATHS = ['/mcp', DEFAULT_GROUPS, '/mcp/bruno', '/mcp/calibur', '/mcp/metamask', '/mcp/3009', '/mcp/erc20', '/mcp/uniswap']

const bruno = await startDevnetBruno(t, { groups: ['bruno', 'calibur', 'metamask', '3009', 'erc20', 'uniswap'] })

async function toolsList(path: string) {
  const url = new URL(path, bruno.mcpUrl).toString()
  const reply = await postRaw(url, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: modernMeta() } }, modernHeaders('tools/list'))
  if (reply.status !== 200 || !reply.json.result) throw new Error(`tools/list ${path} failed: ${reply.text}`)
  return { bytes: Buffer.byteLength(JSON.stringify(reply.json.result)), tools: reply.json.result.tools as any[] }
}

t.test('tools/list per path: size, and every tool declares an outputSchema', async (t) => {
  const sizes: Record<string, number> = {}
  for (const path of PATHS) {
    const { bytes, tools } = await toolsList(path)
    sizes[path] = bytes
    t.comment(`${path}: ${bytes} bytes, ${tools.length} tools`)
    t.ok(tools.length > 0, `${path} serves tools`)
    for (const tool of tools) t.equal(tool.outputSchema?.type, 'object', `${path} ${tool.name} declares an outputSchema`)
  }
  t.ok(sizes[DEFAULT_GROUPS]! <= LIMIT, `the default groups' full tools/list is ${sizes[DEFAULT_GROUPS]} bytes, at most ${LIMIT}`)
})
