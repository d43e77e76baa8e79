import t from 'tap'
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client'
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { offlineConfig, startBruno } from './fixtures/bruno.ts'

// The official clients, as agents run them, against a running Bruno over real HTTP:
// SDK v2 in the 2026-07-28 era, SDK 1.x in the handshake era.

const env = { ...process.env }
const bruno = await startBruno(t, offlineConfig(env), env)
const transfer = { chain: 'local', token: 'USDC', to: '0x1111111111111111111111111111111111111111', amount: '2.25' }
const expectedTransferData =
  '0xa9059cbb' + '1111111111111111111111111111111111111111'.padStart(64, '0') + (2_250_000).toString(16).padStart(64, '0')

async function modernClient(path = '', version = '2026-07-28') {
  const client = new ModernClient({ name: 'bruno-tests', version: '1.0.0' }, { versionNegotiation: { mode: { pin: version } } })
  await client.connect(new ModernTransport(new URL(`${bruno.mcpUrl}${path}`)))
  t.teardown(() => client.close())
  return client
}

t.test('SDK v2 (2026-07-28): discover, list, call', async (t) => {
  const client = await modernClient()
  const discovered = await client.discover()
  t.ok(discovered.supportedVersions.includes('2026-07-28'))
  t.ok(discovered.capabilities.tools)
  t.match(discovered.instructions, /Bruno/)

  const { tools } = await client.listTools()
  t.same(
    tools.map((tool) => tool.name),
    ['erc20_approve', 'erc20_transfer', 'weth_unwrap', 'uniswap_swap_to_eth', 'uniswap_price'],
  )

  const result = await client.callTool({ name: 'erc20_transfer', arguments: transfer })
  t.notOk(result.isError)
  const structured = result.structuredContent as { calls: { to: string; value: string; data: string }[] }
  t.equal(structured.calls.length, 1)
  t.equal(structured.calls[0]!.data, expectedTransferData)
  t.equal(structured.calls[0]!.value, '0')

  const refused = await client.callTool({ name: 'erc20_transfer', arguments: { ...transfer, token: 'DOGE' } })
  t.equal(refused.isError, true)
  t.match((refused.content as { text: string }[])[0]!.text, /DOGE/)
})

t.test('SDK v2: a group path lists only its group', async (t) => {
  const client = await modernClient('/uniswap')
  const { tools } = await client.listTools()
  t.same(tools.map((tool) => tool.name), ['uniswap_swap_to_eth', 'uniswap_price'])
  await t.rejects(client.callTool({ name: 'erc20_transfer', arguments: transfer }), /Unknown tool/)
})

t.test('SDK v2: a version the server does not serve fails loudly', async (t) => {
  await t.rejects(modernClient('', '2099-01-01'), 'pinning an unsupported version cannot connect')
})

t.test('SDK v2: a header that does not match the body is refused', async (t) => {
  // A client whose fetch rewrites Mcp-Name after the SDK built the request: the server must catch it.
  const client = new ModernClient({ name: 'bruno-tests', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } })
  const tampering: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers)
    if (headers.get('mcp-name')) headers.set('mcp-name', 'erc20_approve')
    return fetch(input, { ...init, headers })
  }
  await client.connect(new ModernTransport(new URL(bruno.mcpUrl), { fetch: tampering }))
  t.teardown(() => client.close())
  await t.rejects(client.callTool({ name: 'erc20_transfer', arguments: transfer }), /Header mismatch|-32020/)
})

t.test('SDK 1.x (handshake era): initialize, list, call', async (t) => {
  const client = new LegacyClient({ name: 'bruno-tests-legacy', version: '1.0.0' })
  const transport = new LegacyTransport(new URL(bruno.mcpUrl))
  await client.connect(transport)
  t.teardown(() => client.close())
  t.equal(transport.sessionId, undefined, 'no session was minted')
  t.equal(client.getServerVersion()?.name, 'bruno')
  t.match(client.getInstructions(), /Bruno/)
  t.ok(client.getServerCapabilities()?.tools)

  const { tools } = await client.listTools()
  t.equal(tools.length, 5)
  const result = await client.callTool({ name: 'erc20_transfer', arguments: transfer })
  t.notOk(result.isError)
  t.equal((result.structuredContent as { calls: { data: string }[] }).calls[0]!.data, expectedTransferData)
  await client.ping()
})
