import { Type } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import Fastify from 'fastify'
import { Networks } from '../../core/chain/networks.ts'
import { resultPayload } from '../../core/http/jsonrpc.ts'
import type { ToolContext } from '../../core/tool/tool.ts'
import { erc20Transfer } from '../../plugins/erc20/transfer.ts'
import { offlineConfig } from '../../test/fixtures/bruno.ts'
import { serveBenchIpc } from '../child.ts'

// A tool call's own work on the stack's ceiling, with nothing of Bruno's around it: Fastify (JSON
// body parsed, no logger, no guards, no MCP envelope checks) validating the arguments with the
// tool's compiled TypeBox schema, running erc20_transfer's handler, and serializing its result in
// the bytes Bruno answers. What any server doing this call must spend, whatever its MCP layer.
// argv[2]: Bruno's answer's `_meta` (its serverInfo), so that the bytes match Bruno's.

const meta = process.argv[2]
if (!meta) throw new Error('usage: rawTool.ts <result _meta JSON>')

const env = { ...process.env }
const networks = new Networks(offlineConfig(env), env)
const tool = erc20Transfer(Type.Union([Type.Literal('local')]))
const check = TypeCompiler.Compile(tool.input)
const context = { networks } as unknown as ToolContext

interface CallBody {
  readonly id: number | string
  readonly params: { readonly arguments: unknown }
}

const app = Fastify({ logger: false })
app.post<{ Body: CallBody }>('/mcp', async (request, reply) => {
  const { id, params } = request.body
  if (!check.Check(params.arguments)) return reply.code(400).send()
  const text = JSON.stringify(await tool.handler(params.arguments, context))
  const result = `{"resultType":"complete","content":[{"type":"text","text":${JSON.stringify(text)}}],"structuredContent":${text},"_meta":${meta}}`
  return reply.type('application/json; charset=utf-8').send(resultPayload(id, result))
})
await app.listen({ host: '127.0.0.1', port: 0 })
const address = app.server.address()
if (typeof address !== 'object' || !address) throw new Error('no address')
serveBenchIpc(`http://127.0.0.1:${address.port}`, () => app.close())
