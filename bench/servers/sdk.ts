import { createMcpFastifyApp } from '@modelcontextprotocol/fastify'
import { createMcpHandler, fromJsonSchema, McpServer } from '@modelcontextprotocol/server'
import { Type } from '@sinclair/typebox'
import { Networks } from '../../core/chain/networks.ts'
import type { ToolContext } from '../../core/tool/tool.ts'
import { erc20Transfer } from '../../plugins/erc20/transfer.ts'
import { offlineConfig } from '../../test/fixtures/bruno.ts'
import { serveBenchIpc } from '../child.ts'

// The baseline Bruno's MCP path replaces: the official SDK v2 server (`createMcpHandler`, one
// McpServer per request, as the SDK builds it) mounted on the SDK's Fastify app. It serves the
// same tool: Bruno's published input and output JSON Schemas (validated by the SDK) and the steps
// of Bruno's handler with the same helpers (token resolution, amount parsing, encoding), on the same offline config.

const env = { ...process.env }
const config = offlineConfig(env)
const networks = new Networks(config, env)
const tool = erc20Transfer(Type.Union([Type.Literal('local')]))
const inputSchema = fromJsonSchema<Record<string, unknown>>(JSON.parse(JSON.stringify(tool.input)))
const outputSchema = fromJsonSchema<Record<string, unknown>>(JSON.parse(JSON.stringify(tool.output)))

/** erc20_transfer's own handler: the baseline runs exactly Bruno's tool code, only the MCP layer differs. */
const context = { networks } as unknown as ToolContext
const transfer = (args: Record<string, unknown>) => tool.handler(args as Parameters<typeof tool.handler>[0], context)

const handler = createMcpHandler(
  () => {
    const server = new McpServer({ name: 'sdk-baseline', version: '0.0.0' })
    server.registerTool(
      tool.name,
      { title: tool.title!, description: tool.description, inputSchema, outputSchema, annotations: tool.annotations! },
      async (args) => {
        const output = await transfer(args)
        return { content: [{ type: 'text', text: JSON.stringify(output) }], structuredContent: output }
      },
    )
    return server
  },
  { onerror: (error) => process.stderr.write(`sdk baseline: ${error.message}\n`) },
)

// The body is handed over parsed; these describe the bytes on the wire, not the Request built here.
const HOP_BY_HOP = new Set(['content-length', 'connection', 'transfer-encoding', 'keep-alive'])

const app = createMcpFastifyApp({ host: '127.0.0.1' })
app.post('/mcp', async (request, reply) => {
  // The web-standard face, fed Fastify's parsed body (what @modelcontextprotocol/node's adapter does).
  const headers = new Headers()
  for (const [key, value] of Object.entries(request.headers)) {
    if (typeof value === 'string' && !HOP_BY_HOP.has(key)) headers.set(key, value)
  }
  const webRequest = new Request(`http://${request.headers.host ?? '127.0.0.1'}${request.url}`, { method: 'POST', headers })
  const response = await handler.fetch(webRequest, { parsedBody: request.body })
  reply.code(response.status)
  response.headers.forEach((value, key) => {
    reply.header(key, value)
  })
  return reply.send(await response.text())
})
await app.listen({ host: '127.0.0.1', port: 0 })
const address = app.server.address()
if (typeof address !== 'object' || !address) throw new Error('no address')
serveBenchIpc(`http://127.0.0.1:${address.port}`, async () => {
  await handler.close()
  await app.close()
})
