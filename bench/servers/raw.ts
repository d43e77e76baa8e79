import Fastify from 'fastify'
import { serveBenchIpc } from '../child.ts'

// The stack's ceiling: Fastify (JSON body parsed, no logger) answering POST /mcp with fixed bytes.
// argv[2]: the response body to send.
const body = process.argv[2]
if (!body) throw new Error('usage: raw.ts <response body>')

const app = Fastify({ logger: false })
app.post('/mcp', async (_request, reply) => reply.type('application/json').send(body))
await app.listen({ host: '127.0.0.1', port: 0 })
const address = app.server.address()
if (typeof address !== 'object' || !address) throw new Error('no address')
serveBenchIpc(`http://127.0.0.1:${address.port}`, () => app.close())
