import { readFile } from 'node:fs/promises'
import t from 'tap'
import { getAddress } from 'viem'
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client'
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { ToolRegistry } from '../core/registry.ts'
import { OFFLINE_RPC_URL, OFFLINE_RUNNER_KEY, offlineConfig, startBruno } from './fixtures/bruno.ts'
import { modernHeaders, modernMeta, postRaw } from './fixtures/mcpHttp.ts'

// Prompts, resources and completion, through the official clients of both eras and raw HTTP where
// the exact bytes matter (caching fields, capabilities, header checks). No chain is needed: the
// prompts render from the config, and the resources read the config and SPEC.md.

const env = { ...process.env }
const config = offlineConfig(env, { groups: ['bruno', 'calibur', '3009', 'erc20', 'uniswap'] })
const bruno = await startBruno(t, config, env)
const account = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'
const PROMPTS = ['pay_gas_in_token', 'swap_to_eth', 'run_builder_call', 'delegate_and_run']
const TASKS = 'io.modelcontextprotocol/tasks'

async function modernClient(path = '') {
  const client = new ModernClient({ name: 'bruno-tests', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } })
  await client.connect(new ModernTransport(new URL(`${bruno.mcpUrl}${path}`)))
  t.teardown(() => client.close())
  return client
}

async function legacyClient(path = '') {
  const client = new LegacyClient({ name: 'bruno-tests-legacy', version: '1.0.0' })
  await client.connect(new LegacyTransport(new URL(`${bruno.mcpUrl}${path}`)))
  t.teardown(() => client.close())
  return client
}

/** A modern request as a conforming client sends it, `Mcp-Name` from `name` unless given. */
function modern(path: string, method: string, params: Record<string, unknown> = {}, name?: string) {
  return postRaw(`${bruno.mcpUrl}${path}`, { jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: modernMeta() } }, modernHeaders(method, name))
}

function legacy(path: string, method: string, params: Record<string, unknown> = {}) {
  return postRaw(`${bruno.mcpUrl}${path}`, { jsonrpc: '2.0', id: 1, method, params }, { 'mcp-protocol-version': '2025-11-25' })
}

/** The positions of `names` in `text`, in the order given: increasing when the text walks them in that order. */
function positions(text: string, names: readonly string[]): number[] {
  let from = 0
  return names.map((name) => {
    const at = text.indexOf(name, from)
    if (at >= 0) from = at + name.length
    return at
  })
}

t.test('capabilities: each path advertises what it serves, in each era', async (t) => {
  const UI = 'io.modelcontextprotocol/ui'
  const cases: [string, object, object][] = [
    [
      '',
      { tools: { listChanged: false }, prompts: { listChanged: false }, resources: { listChanged: false }, completions: {}, extensions: { [TASKS]: {}, [UI]: {} } },
      { tools: { listChanged: false }, prompts: { listChanged: false }, resources: { listChanged: false }, completions: {} },
    ],
    // Every prompt needs calibur or 3009 besides bruno: the relay alone has resources, tasks and
    // the status view (submit's and status's).
    ['/bruno', { tools: { listChanged: false }, resources: { listChanged: false }, completions: {}, extensions: { [TASKS]: {}, [UI]: {} } }, { tools: { listChanged: false }, resources: { listChanged: false }, completions: {} }],
    ['/erc20,uniswap', { tools: { listChanged: false } }, { tools: { listChanged: false } }],
    // The prompts and resources belong to the bruno group: calibur alone has only its review view
    // (a resource to read, MCP Apps in the modern era).
    ['/calibur', { tools: { listChanged: false }, resources: { listChanged: false }, extensions: { [UI]: {} } }, { tools: { listChanged: false }, resources: { listChanged: false } }],
  ]
  for (const [path, modernCapabilities, legacyCapabilities] of cases) {
    const discovered = await modern(path, 'server/discover')
    t.same(discovered.json.result.capabilities, modernCapabilities, `discover ${path || '/mcp'}`)
    const initialized = await postRaw(`${bruno.mcpUrl}${path}`, {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: { extensions: { [TASKS]: {} } }, clientInfo: { name: 't', version: '0' } },
    })
    t.same(initialized.json.result.capabilities, legacyCapabilities, `initialize ${path || '/mcp'}`)
  }
})

t.test('a path without prompts or resources does not serve their methods', async (t) => {
  for (const method of ['prompts/list', 'resources/list', 'resources/templates/list', 'completion/complete']) {
    const reply = await modern('/erc20,uniswap', method)
    t.equal(reply.status, 404, `${method}: 404 in the modern era`)
    t.equal(reply.json.error.code, -32601)
    const old = await legacy('/erc20,uniswap', method)
    t.equal(old.status, 200)
    t.equal(old.json.error.code, -32601, `${method}: -32601 in the legacy era`)
  }
  const prompt = await modern('/bruno', 'prompts/get', { name: 'swap_to_eth', arguments: {} }, 'swap_to_eth')
  t.equal(prompt.json.error.code, -32601, 'prompts/get on a path with no prompt')
})

t.test('prompts are listed where every group they walk is served', async (t) => {
  const everything = await modernClient()
  t.same((await everything.listPrompts()).prompts.map((prompt) => prompt.name), PROMPTS)
  const signedTransferOnly = await modernClient('/bruno,3009')
  t.same((await signedTransferOnly.listPrompts()).prompts.map((prompt) => prompt.name), ['pay_gas_in_token'])
  const calibur = await modernClient('/calibur,bruno')
  t.same((await calibur.listPrompts()).prompts.map((prompt) => prompt.name), ['run_builder_call', 'delegate_and_run'], 'no uniswap: no swap prompt')
})

t.test('SDK v2: prompts walk their tools in order and say what the wallet signs', async (t) => {
  const client = await modernClient()
  const { prompts } = await client.listPrompts()
  const swap = prompts.find((prompt) => prompt.name === 'swap_to_eth')!
  t.same(
    swap.arguments!.map((argument) => [argument.name, argument.required]),
    [['chain', true], ['account', true], ['amount', true], ['token', false]],
  )

  const flows: [string, Record<string, string>, string[]][] = [
    ['pay_gas_in_token', { chain: 'local', account }, ['`quote`', '`payment_authorization`', 'sign', '`submit`', '`status`']],
    ['swap_to_eth', { chain: 'local', account, amount: '25' }, ['`account`', '`uniswap_swap_to_eth`', '`calibur_batch`', 'sign', '`calibur_execute`', '`submit`', '`status`']],
    ['run_builder_call', { chain: 'local', account, request: 'deposit 100 USDC into a vault' }, ['`account`', 'builder', '`calibur_batch`', 'sign', '`calibur_execute`', '`submit`', '`status`']],
    ['delegate_and_run', { chain: 'local', account }, ['`account`', 'EIP-7702 authorization', '`calibur_batch`', 'authorizationList', 'sign', '`calibur_execute`', '`submit`', '`status`']],
  ]
  for (const [name, args, walk] of flows) {
    const result = await client.getPrompt({ name, arguments: args })
    t.equal(result.messages.length, 1, name)
    t.equal(result.messages[0]!.role, 'user')
    const text = (result.messages[0]!.content as { text: string }).text
    const at = positions(text, walk)
    t.notOk(at.includes(-1), `${name} names each step: ${walk.join(' → ')}`)
    t.same(at, [...at].sort((a, b) => a - b), `${name} walks them in order`)
    t.match(text, /UNCHANGED/, `${name}: the typed data goes to the wallet unchanged`)
    t.match(text, /smart-wallet/, `${name}: says smart-wallet signers cannot sign`)
    t.match(text, account, `${name}: the account is in the text`)
    t.match(text, /USDC/, `${name}: pays in the default token`)
  }
  const builder = await client.getPrompt({ name: 'run_builder_call', arguments: { chain: 'local', account, request: 'bridge 5 USDC' } })
  t.match((builder.messages[0]!.content as { text: string }).text, /as the fromAddress AND as the recipient/)
  const delegate = await client.getPrompt({ name: 'delegate_and_run', arguments: { chain: 'local', account } })
  t.match((delegate.messages[0]!.content as { text: string }).text, /0x000000005c84F8Fd50b21CAC312528A64437030e/, 'names the Calibur address to delegate to')
})

t.test('SDK v2: prompt arguments are checked', async (t) => {
  const client = await modernClient()
  const refusals: [Record<string, unknown>, RegExp][] = [
    [{ name: 'swap_to_eth', arguments: { chain: 'local', account } }, /requires "amount"/],
    [{ name: 'swap_to_eth', arguments: { chain: 'mainnet', account, amount: '1' } }, /chain "mainnet" is not configured: this deployment serves local/],
    [{ name: 'swap_to_eth', arguments: { chain: 'local', account, amount: '1', token: 'WETH' } }, /not paid in "WETH" on local: pay in USDC/],
    [{ name: 'swap_to_eth', arguments: { chain: 'local', account: '0x70997970c51812dc3a010c7d01b50e0d17dc79C8', amount: '1' } }, /EIP-55/],
    [{ name: 'swap_to_eth', arguments: { chain: 'local', account, amount: 'lots' } }, /not a whole-unit amount/],
    [{ name: 'swap_to_eth', arguments: { chain: 'local', account, amount: '1', slippage: '5' } }, /has no argument "slippage"/],
    [{ name: 'no_such_prompt', arguments: {} }, /Unknown prompt: no_such_prompt/],
  ]
  for (const [params, message] of refusals) {
    const error = await client.getPrompt(params as never).then(
      () => undefined,
      (caught: { code?: number; message: string }) => caught,
    )
    t.equal(error?.code, -32602, `${JSON.stringify(params)}: -32602`)
    t.match(error?.message, message)
  }
})

t.test('SDK v2: completion of chain and token', async (t) => {
  const client = await modernClient()
  const ref = { type: 'ref/prompt' as const, name: 'swap_to_eth' }
  t.same((await client.complete({ ref, argument: { name: 'chain', value: 'lo' } })).completion, { values: ['local'], total: 1, hasMore: false })
  t.same((await client.complete({ ref, argument: { name: 'chain', value: 'x' } })).completion.values, [])
  // WETH is configured but has no swap path: Bruno cannot be paid in it, so it is not offered.
  t.same((await client.complete({ ref, argument: { name: 'token', value: '' }, context: { arguments: { chain: 'local' } } })).completion.values, ['USDC'])
  t.same((await client.complete({ ref, argument: { name: 'token', value: 'us' } })).completion.values, ['USDC'], 'no chain chosen: every chain\'s')
  t.same((await client.complete({ ref, argument: { name: 'account', value: '0x' } })).completion.values, [], 'no completer: nothing')
  const template = { type: 'ref/resource' as const, uri: 'bruno://{chain}/submissions/{id}' }
  t.same((await client.complete({ ref: template, argument: { name: 'chain', value: '' } })).completion.values, ['local'])
  await t.rejects(client.complete({ ref: { type: 'ref/prompt', name: 'nope' }, argument: { name: 'chain', value: '' } }), { code: -32602 })
})

t.test('SDK v2: resources', async (t) => {
  const client = await modernClient()
  const { resources } = await client.listResources()
  t.same(
    resources.map((resource) => [resource.uri, resource.mimeType]),
    [
      ['bruno://local/config', 'application/json'],
      ['bruno://spec', 'text/markdown'],
    ],
  )
  const { resourceTemplates } = await client.listResourceTemplates()
  t.same(resourceTemplates.map((template) => template.uriTemplate), ['bruno://{chain}/submissions/{id}'])

  const read = await client.readResource({ uri: 'bruno://local/config' })
  const [content] = read.contents as { uri: string; mimeType: string; text: string }[]
  t.equal(content!.uri, 'bruno://local/config')
  const network = config.networks[0]!
  const published = JSON.parse(content!.text)
  t.equal(published.chain, 'local')
  t.equal(published.chainId, 31337)
  t.equal(published.payee, '0xa0Ee7A142d267C1f36714E4a8F75612F20a79720')
  t.same(published.delegates, [{ name: 'Calibur', address: '0x000000005c84F8Fd50b21CAC312528A64437030e' }], 'the delegates served, at their addresses on the chain')
  t.equal(published.runner.contract, getAddress('0x0000000000000000000000000000000000000b0b'), 'checksummed')
  t.same(published.tokens.map((token: { symbol: string; payable: boolean }) => [token.symbol, token.payable]), [['USDC', true], ['WETH', false]])
  t.same(published.margins, network.margins)
  t.same(published.relay, network.relay)
  for (const secret of [OFFLINE_RPC_URL, OFFLINE_RUNNER_KEY, OFFLINE_RUNNER_KEY.slice(2), 'offline-rpc-secret-key', network.rpcUrl.env, network.runner.key.env]) {
    t.notOk(content!.text.includes(secret), `the config resource does not carry ${secret.slice(0, 12)}…`)
  }

  const spec = await client.readResource({ uri: 'bruno://spec' })
  t.equal((spec.contents[0] as { text: string }).text, await readFile(new URL('../SPEC.md', import.meta.url), 'utf8'), 'the spec is SPEC.md as it is')

  await t.rejects(client.readResource({ uri: 'bruno://local/submissions/no-such-id' }), { code: -32602 }, 'an unknown submission')
  await t.rejects(client.readResource({ uri: 'bruno://elsewhere/config' }), { code: -32602 }, 'an unknown resource')
})

t.test('modern caching fields and result shapes', async (t) => {
  const lists: [string, string][] = [
    ['prompts/list', 'prompts'],
    ['resources/list', 'resources'],
    ['resources/templates/list', 'resourceTemplates'],
  ]
  for (const [method, key] of lists) {
    const { json } = await modern('', method)
    t.equal(json.result.resultType, 'complete', method)
    t.ok(Array.isArray(json.result[key]), `${method} has ${key}`)
    t.equal(json.result.ttlMs, 86_400_000, `${method}: a day (lists change with a deployment)`)
    t.equal(json.result.cacheScope, 'public')
    t.same(json.result._meta['io.modelcontextprotocol/serverInfo'].name, 'bruno')
  }
  const reads: [string, number, string][] = [
    ['bruno://local/config', 3_600_000, 'public'],
    ['bruno://spec', 86_400_000, 'public'],
  ]
  for (const [uri, ttlMs, cacheScope] of reads) {
    const { json } = await modern('', 'resources/read', { uri }, uri)
    t.equal(json.result.resultType, 'complete', uri)
    t.equal(json.result.ttlMs, ttlMs, `${uri}: ttlMs`)
    t.equal(json.result.cacheScope, cacheScope, `${uri}: cacheScope`)
    t.equal(json.result.contents.length, 1)
  }
  const prompt = await modern('', 'prompts/get', { name: 'pay_gas_in_token', arguments: { chain: 'local', account } }, 'pay_gas_in_token')
  t.equal(prompt.json.result.resultType, 'complete')
  t.equal(prompt.json.result.ttlMs, undefined, 'prompts/get is not a cacheable result')
  const completion = await modern('', 'completion/complete', { ref: { type: 'ref/prompt', name: 'swap_to_eth' }, argument: { name: 'chain', value: '' } })
  t.equal(completion.json.result.resultType, 'complete')
  t.same(completion.json.result.completion, { values: ['local'], total: 1, hasMore: false })

  const missing = await modern('', 'resources/read', { uri: 'bruno://nothing' }, 'bruno://nothing')
  t.equal(missing.status, 200)
  t.same(missing.json.error, { code: -32602, message: 'Resource not found', data: { uri: 'bruno://nothing' } })
})

t.test('Mcp-Name must mirror the prompt name and the resource URI', async (t) => {
  const cases: [string, Record<string, unknown>, string][] = [
    ['prompts/get', { name: 'swap_to_eth', arguments: { chain: 'local', account, amount: '1' } }, 'delegate_and_run'],
    ['resources/read', { uri: 'bruno://spec' }, 'bruno://local/config'],
  ]
  for (const [method, params, wrongName] of cases) {
    const mismatch = await modern('', method, params, wrongName)
    t.equal(mismatch.status, 400, `${method}: a name that does not match`)
    t.equal(mismatch.json.error.code, -32020)
    t.match(mismatch.json.error.message, /Mcp-Name/)
    const absent = await postRaw(bruno.mcpUrl, { jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: modernMeta() } }, modernHeaders(method))
    t.equal(absent.status, 400, `${method}: no Mcp-Name at all`)
    t.equal(absent.json.error.code, -32020)
    const encoded = `=?base64?${Buffer.from(String(params.name ?? params.uri)).toString('base64')}?=`
    const sentinel = await modern('', method, params, encoded)
    t.equal(sentinel.status, 200, `${method}: the Base64 sentinel form is decoded first`)
    t.ok(sentinel.json.result)
  }
})

t.test('SDK 1.x (handshake era): prompts, completion, resources', async (t) => {
  const client = await legacyClient()
  const capabilities = client.getServerCapabilities()
  t.ok(capabilities?.prompts && capabilities.resources && capabilities.completions)
  t.same((await client.listPrompts()).prompts.map((prompt) => prompt.name), PROMPTS)
  const prompt = await client.getPrompt({ name: 'pay_gas_in_token', arguments: { chain: 'local', account, token: 'usdc' } })
  t.match((prompt.messages[0]!.content as { text: string }).text, /`payment_authorization` with \{chain: "local", from: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8", token: "USDC"/)
  const completion = await client.complete({ ref: { type: 'ref/prompt', name: 'pay_gas_in_token' }, argument: { name: 'token', value: 'U' }, context: { arguments: { chain: 'local' } } })
  t.same(completion.completion.values, ['USDC'])
  t.same((await client.listResources()).resources.map((resource) => resource.uri), ['bruno://local/config', 'bruno://spec'])
  t.same((await client.listResourceTemplates()).resourceTemplates.map((template) => template.uriTemplate), ['bruno://{chain}/submissions/{id}'])
  const read = await client.readResource({ uri: 'bruno://local/config' })
  t.equal(JSON.parse((read.contents[0] as { text: string }).text).chainId, 31337)

  const raw = await legacy('', 'resources/read', { uri: 'bruno://local/config' })
  t.equal(raw.json.result.ttlMs, undefined, 'no modern fields in the legacy era')
  t.equal(raw.json.result.resultType, undefined)
  // 2025-11-25 names a missing resource -32002; the modern era's -32602 replaced it.
  await t.rejects(client.readResource({ uri: 'bruno://local/submissions/no-such-id' }), { code: -32002 })
  await t.rejects(client.getPrompt({ name: 'swap_to_eth', arguments: { chain: 'local' } }), { code: -32602 })
})

t.test('the registry refuses ambiguous prompts and resources at start', async (t) => {
  const prompt = { name: 'hello', description: 'Greets.', arguments: [], render: () => 'hello' }
  const resource = { uri: 'x://a', name: 'a', description: 'A.', mimeType: 'text/plain', cache: { ttlMs: 0, scope: 'public' as const }, read: async () => 'a' }
  const group = (name: string, order: number, extra: object) => ({ name, order, instructions: name, tools: [], ...extra })
  const registry = new ToolRegistry()
  registry.addGroup(group('one', 1, { prompts: [prompt], resources: [resource] }))
  t.throws(() => registry.addGroup(group('two', 2, { prompts: [prompt] })), /group "two": prompt "hello" is already registered by group "one"/)
  t.throws(() => registry.addGroup(group('three', 3, { resources: [resource] })), /resource "x:\/\/a" is already registered by group "one"/)
  t.throws(() => registry.addGroup(group('four', 4, { prompts: [{ ...prompt, name: 'has space' }] })), /prompt name "has space" must match/)
  const template = { uriTemplate: 'x://{id}', name: 't', description: 'T.', mimeType: 'text/plain', cache: { ttlMs: 0, scope: 'private' as const }, read: async () => 't' }
  t.throws(() => registry.addGroup(group('five', 5, { resourceTemplates: [{ ...template, uriTemplate: 'x://fixed' }] })), /has no variable/)
  t.throws(() => registry.addGroup(group('six', 6, { resourceTemplates: [{ ...template, complete: { chain: () => [] } }] })), /completes "chain", which it does not have/)
  registry.addGroup(group('seven', 7, { resourceTemplates: [template], prompts: [{ ...prompt, name: 'needs_eight', requires: ['eight'] }] }))
  t.same([...registry.view(['one', 'seven'])!.prompts.keys()], ['hello'], 'a prompt whose required group is not served is not listed')
  t.same(registry.view(['seven'])!.templates[0]!.match('x://a%2Fb'), { id: 'a/b' }, 'template variables are percent-decoded')
  t.equal(registry.view(['seven'])!.templates[0]!.match('x://a/b'), undefined, 'a variable is one path segment')
})
