import { execFile } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import t, { type Test } from 'tap'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { decodeFunctionData, getAddress } from 'viem'
import { loadConfig } from '../config/load.ts'
import { offlineConfig, startBruno } from './fixtures/bruno.ts'

// Groups from outside Bruno, installed as an operator installs them: a config file whose `plugins`
// name the example group (examples/hello-group) by path or by package name, read by loadConfig,
// served by startServer, called through the official SDK v2 client.

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const EXAMPLE = join(ROOT, 'examples', 'hello-group')
const GUESTBOOK = '0x1234567890abcdef1234567890abcdef12345678'
const ERC20_TOOLS = ['erc20_approve', 'erc20_transfer', 'weth_unwrap']
const UNISWAP_TOOLS = ['uniswap_swap_to_eth', 'uniswap_price']
const HELLO_TOOLS = ['hello_greet', 'hello_sign_guestbook']

const guestbookAbi = [
  { type: 'function', name: 'sign', stateMutability: 'nonpayable', inputs: [{ name: 'message', type: 'string' }], outputs: [] },
] as const

/** A config file in a fresh directory (with `files` beside it), the offline config plus `overrides`. */
function configFile(t: Test, overrides: Record<string, unknown>, files: Parameters<Test['testdir']>[0] = {}) {
  const env = { ...process.env }
  const dir = t.testdir(files)
  const path = join(dir, 'bruno.json')
  writeFileSync(path, JSON.stringify(offlineConfig(env, overrides)))
  return { path, env }
}

/** Starts Bruno as `bruno --config <path>` does: loadConfig, then the server with the config's directory. */
async function serve(t: Test, file: { path: string; env: NodeJS.ProcessEnv }) {
  const config = await loadConfig(file.path, file.env)
  return startBruno(t, config, file.env, [], dirname(file.path))
}

async function client(t: Test, url: string) {
  const sdk = new Client({ name: 'bruno-tests', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } })
  await sdk.connect(new StreamableHTTPClientTransport(new URL(url)))
  t.teardown(() => sdk.close())
  return sdk
}

const byPath = (dir: string) => ({ from: relative(dir, EXAMPLE), options: { guestbook: GUESTBOOK } })

t.test('the example group, loaded by path, is served at its order and its tools work', async (t) => {
  const dir = t.testdir({})
  const file = { path: join(dir, 'bruno.json'), env: { ...process.env } }
  const from = relative(dir, EXAMPLE)
  t.ok(from.startsWith('..'), 'the path is relative to the config file, not to the working directory')
  writeFileSync(file.path, JSON.stringify(offlineConfig(file.env, { groups: ['hello', 'uniswap', 'erc20'], plugins: [{ from, options: { guestbook: GUESTBOOK } }] })))
  const bruno = await serve(t, file)

  const all = await client(t, bruno.mcpUrl)
  const { tools } = await all.listTools()
  t.same(tools.map((tool) => tool.name), [...ERC20_TOOLS, ...UNISWAP_TOOLS, ...HELLO_TOOLS], 'order 60: after erc20 (40) and uniswap (50), whatever the config\'s order')
  t.match((await all.discover()).instructions, /hello — an example group/)

  const own = await client(t, `${bruno.mcpUrl}/hello,erc20`)
  t.same((await own.listTools()).tools.map((tool) => tool.name), [...ERC20_TOOLS, ...HELLO_TOOLS])
  const alone = await client(t, `${bruno.mcpUrl}/hello`)
  t.same((await alone.listTools()).tools.map((tool) => tool.name), HELLO_TOOLS)

  const greeted = await alone.callTool({ name: 'hello_greet', arguments: { chain: 'local', token: 'usdc' } })
  t.notOk(greeted.isError)
  t.same(greeted.structuredContent, {
    greeting: 'Hello from local (chain 31337): USDC has 6 decimals',
    token: { address: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913', symbol: 'USDC', decimals: 6 },
  })

  // Refusals thrown with the API's ToolError (from its requireToken, and the group's own) are
  // tool errors the caller reads, not internal errors: the group shares Bruno's copy of the API.
  const unknown = await alone.callTool({ name: 'hello_greet', arguments: { chain: 'local', token: 'DOGE' } })
  t.equal(unknown.isError, true)
  t.match((unknown.content as { text: string }[])[0]!.text, /unknown token "DOGE" on local/)
  const unconfigured = await alone.callTool({ name: 'hello_greet', arguments: { chain: 'local', token: GUESTBOOK } })
  t.equal(unconfigured.isError, true)
  t.match((unconfigured.content as { text: string }[])[0]!.text, /hello greets configured tokens only/)

  const signed = await alone.callTool({ name: 'hello_sign_guestbook', arguments: { chain: 'local', message: 'gm from a plugin' } })
  t.notOk(signed.isError)
  const [call] = (signed.structuredContent as { calls: { to: string; value: string; data: `0x${string}` }[] }).calls
  t.equal(call!.to, getAddress(GUESTBOOK), 'the guestbook from the group\'s options')
  t.equal(call!.value, '0')
  t.same(decodeFunctionData({ abi: guestbookAbi, data: call!.data }), { functionName: 'sign', args: ['gm from a plugin'] })

  await t.rejects(alone.callTool({ name: 'erc20_transfer', arguments: {} }), /Unknown tool/, 'a path naming the group serves that group only')
})

t.test('by package name, installed beside the config file; its order overridden by the config', async (t) => {
  const file = configFile(
    t,
    { groups: ['erc20', 'uniswap', 'hello'], plugins: [{ from: 'bruno-hello-group', order: 45, options: { guestbook: GUESTBOOK, greeting: 'Hi' } }] },
    { node_modules: { 'bruno-hello-group': t.fixture('symlink', EXAMPLE) } },
  )
  const bruno = await serve(t, file)
  const sdk = await client(t, bruno.mcpUrl)
  t.same((await sdk.listTools()).tools.map((tool) => tool.name), [...ERC20_TOOLS, ...HELLO_TOOLS, ...UNISWAP_TOOLS], 'order 45: between erc20 and uniswap')
  const greeted = await sdk.callTool({ name: 'hello_greet', arguments: { chain: 'local', token: 'WETH' } })
  t.match(greeted.structuredContent, { greeting: /^Hi from local/ }, 'the configured greeting, not the default')
})

t.test('installed but not enabled: no path, not in /mcp', async (t) => {
  const dir = t.testdir({})
  const file = { path: join(dir, 'bruno.json'), env: { ...process.env } }
  writeFileSync(file.path, JSON.stringify(offlineConfig(file.env, { groups: ['erc20', 'uniswap'], plugins: [byPath(dir)] })))
  const bruno = await serve(t, file)
  const listed = await fetch(`${bruno.mcpUrl}/hello`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
  t.equal(listed.status, 404)
  t.equal(await listed.text(), '', 'no MCP body')
  t.equal((await fetch(`${bruno.mcpUrl}/erc20,hello`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status, 404)
  const sdk = await client(t, bruno.mcpUrl)
  t.same((await sdk.listTools()).tools.map((tool) => tool.name), [...ERC20_TOOLS, ...UNISWAP_TOOLS])
  t.notMatch((await sdk.discover()).instructions, /hello/)
})

// Plugins written as plain JavaScript, beside the config: a third party's group need not be TypeScript.
const clashingTool = `import { definePlugin, defineTool, Type } from 'bruno/plugin'
export default definePlugin({
  name: 'clash',
  order: 70,
  setup: () => ({
    instructions: 'clash — reuses a built-in tool name.',
    tools: [defineTool({
      name: 'erc20_transfer', description: 'a second erc20_transfer',
      input: Type.Object({}, { additionalProperties: false }), output: Type.Object({}, { additionalProperties: false }),
      handler: async () => ({}),
    })],
  }),
})
`
const namedErc20 = `import { definePlugin } from 'bruno/plugin'
export default definePlugin({ name: 'erc20', order: 70, setup: () => ({ instructions: 'another erc20', tools: [] }) })
`

t.test('a misconfigured group stops the start with a message naming it', async (t) => {
  const cases: { what: string; overrides: (dir: string) => Record<string, unknown>; message: RegExp }[] = [
    {
      what: 'a group name used twice (a plugin and a built-in)',
      overrides: () => ({ plugins: [{ from: './erc20.mjs' }] }),
      message: /^config plugins\[0\] \(group "erc20"\): a group named "erc20" is already installed \(built in\)$/,
    },
    {
      what: 'a group name used twice (two plugins)',
      overrides: (dir) => ({ plugins: [byPath(dir), byPath(dir)] }),
      message: /^config plugins\[1\] \(group "hello"\): a group named "hello" is already installed \(plugins\[0\]\)$/,
    },
    {
      what: 'a tool name that clashes',
      overrides: () => ({ groups: ['erc20', 'clash'], plugins: [{ from: './clash.mjs' }] }),
      message: /^config groups: group "clash" \(plugins\[0\]\) cannot be served: .*tool "erc20_transfer" is already registered by group "erc20"$/,
    },
    {
      what: 'an order that clashes',
      overrides: (dir) => ({ groups: ['erc20', 'hello'], plugins: [{ ...byPath(dir), order: 40 }] }),
      message: /^config groups: group "hello" \(plugins\[0\]\) has order 40, as group "erc20" \(built in\) has/,
    },
    {
      what: 'invalid options',
      overrides: (dir) => ({ groups: ['hello'], plugins: [{ ...byPath(dir), options: { guestbook: 'the-secret-guestbook' } }] }),
      message: /^config plugins\[0\] \(group "hello"\): options\.guestbook: Expected string to match/,
    },
    {
      what: 'a required option missing',
      overrides: (dir) => ({ groups: ['hello'], plugins: [{ from: byPath(dir).from }] }),
      message: /^config plugins\[0\] \(group "hello"\): options\.guestbook: Expected required property$/,
    },
    {
      what: 'an unknown option',
      overrides: (dir) => ({ groups: ['hello'], plugins: [{ ...byPath(dir), options: { guestbook: GUESTBOOK, colour: 'blue' } }] }),
      message: /^config plugins\[0\] \(group "hello"\): options\.colour: Unexpected property$/,
    },
    {
      what: 'an enabled group nothing installs',
      overrides: () => ({ groups: ['erc20', 'hello'] }),
      message: /^config groups: no group "hello" is installed \(installed: bruno, calibur, metamask, 3009, erc20, uniswap\)$/,
    },
    {
      what: 'a package that is not installed',
      overrides: () => ({ plugins: [{ from: 'bruno-no-such-group' }] }),
      message: /^config plugins\[0\]\.from: no package "bruno-no-such-group" is installed beside the config file or beside Bruno$/,
    },
    {
      what: 'a module that exports no group',
      overrides: () => ({ plugins: [{ from: './notAGroup.mjs' }] }),
      message: /^config plugins\[0\]\.from: "\.\/notAGroup\.mjs" does not default-export a group/,
    },
  ]
  for (const { what, overrides, message } of cases) {
    await t.test(what, async (t) => {
      const dir = t.testdir({ 'clash.mjs': clashingTool, 'erc20.mjs': namedErc20, 'notAGroup.mjs': 'export default { name: "nope" }\n' })
      const file = { path: join(dir, 'bruno.json'), env: { ...process.env } }
      writeFileSync(file.path, JSON.stringify(offlineConfig(file.env, overrides(dir))))
      const started = serve(t, file)
      await t.rejects(started, { name: 'ConfigError', message })
      await started.catch((error: Error) => t.notMatch(error.message, /the-secret-guestbook/, 'an option\'s value is never quoted'))
    })
  }
})

t.test('`bruno --config` exits 1 on a misconfigured group, the message on stderr', async (t) => {
  const dir = t.testdir({})
  const file = { path: join(dir, 'bruno.json'), env: { ...process.env } }
  writeFileSync(file.path, JSON.stringify(offlineConfig(file.env, { groups: ['hello'], plugins: [{ ...byPath(dir), options: { guestbook: 'the-secret-guestbook' } }] })))
  const cli = promisify(execFile)(process.execPath, ['--import', 'tsx', 'core/cli.ts', '--config', file.path, '--no-preflight'], { cwd: ROOT, env: file.env })
  const failed = (await cli.then(() => undefined, (error: unknown) => error)) as { code: number; stderr: string } | undefined
  t.equal(failed?.code, 1)
  t.match(failed?.stderr, /^bruno: config plugins\[0\] \(group "hello"\): options\.guestbook: Expected string to match/m)
  t.notMatch(failed?.stderr, /the-secret-guestbook/)
})

t.test('the built-in groups and the examples reach core only through the plugin API', async (t) => {
  const files = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
      const path = join(dir, entry.name)
      return entry.isDirectory() ? files(path) : entry.name.endsWith('.ts') ? [path] : []
    })
  const sources = [...files(join(ROOT, 'plugins')), ...files(EXAMPLE)]
  t.ok(sources.length > 20)
  const api = join(ROOT, 'core', 'plugin.ts')
  // Bruno's own Solidity (the Calibur stand-in the calibur group places on the devnet) is no part of core.
  const ownContracts = join(ROOT, 'contracts', 'artifacts.ts')
  const reaching = sources.flatMap((file) =>
    [...readFileSync(file, 'utf8').matchAll(/from '(\.[^']+)'/g)]
      .map(([, specifier]) => resolve(dirname(file), specifier!))
      .filter((target) => !target.startsWith(join(ROOT, 'plugins')) && !target.startsWith(EXAMPLE) && target !== api)
      .filter((target) => !(file.startsWith(join(ROOT, 'plugins')) && target === ownContracts))
      .map((target) => `${relative(ROOT, file)} → ${relative(ROOT, target)}`),
  )
  t.same(reaching, [], 'no relative import leaves plugins/ or the example except to core/plugin.ts (and, from a built-in group, to contracts/artifacts.ts)')
  t.ok(sources.some((file) => readFileSync(file, 'utf8').includes("from '../../core/plugin.ts'")), 'the built-in groups do use the API')
  for (const file of files(EXAMPLE)) t.notMatch(readFileSync(file, 'utf8'), /from '\.\.\//, `${relative(ROOT, file)} imports only its own files and packages`)
  // The third-party delegate: its own files, Bruno's exports, viem and Node.
  const delegateExample = join(ROOT, 'examples', 'simple7702-group')
  for (const file of readdirSync(delegateExample).filter((name) => name.endsWith('.ts'))) {
    const imported = [...readFileSync(join(delegateExample, file), 'utf8').matchAll(/from '([^']+)'/g)].map(([, specifier]) => specifier!)
    t.same(imported.filter((specifier) => !/^(\.\/[\w.]+\.ts|bruno\/plugin|viem(\/\w+)?|node:\w+)$/.test(specifier)), [], `examples/simple7702-group/${file} imports only its own files, bruno/plugin, viem and node:`)
  }
})

// Issue 45, point 3: arrows point down. The config is read before core exists, so config/ takes
// nothing from core but types; and only the composition root (the CLI, its commands) names plugins/.
t.test('arrows point down: config/ imports no value from core/; only the composition root imports plugins/', async (t) => {
  const tsFiles = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
      const path = join(dir, entry.name)
      return entry.isDirectory() ? tsFiles(path) : entry.name.endsWith('.ts') ? [path] : []
    })
  const valueImports = (file: string) => [...readFileSync(file, 'utf8').matchAll(/^import (?!type )[^;]*? from '([^']+)'/gm)].map(([, specifier]) => resolve(dirname(file), specifier!))
  const configToCore = tsFiles(join(ROOT, 'config')).flatMap((file) =>
    valueImports(file)
      .filter((target) => target.startsWith(join(ROOT, 'core')))
      .map((target) => `${relative(ROOT, file)} → ${relative(ROOT, target)}`),
  )
  t.same(configToCore, [], 'config/ imports only types from core/')
  const compositionRoot = [join(ROOT, 'core', 'cli.ts'), join(ROOT, 'core', 'commands')]
  const coreToPlugins = tsFiles(join(ROOT, 'core'))
    .filter((file) => !compositionRoot.some((root) => file === root || file.startsWith(`${root}/`)))
    .flatMap((file) =>
      [...readFileSync(file, 'utf8').matchAll(/from '([^']+)'/g)]
        .map(([, specifier]) => resolve(dirname(file), specifier!))
        .filter((target) => target.startsWith(join(ROOT, 'plugins')))
        .map((target) => `${relative(ROOT, file)} → ${relative(ROOT, target)}`),
    )
  t.same(coreToPlugins, [], 'core/ names plugins/ only from the CLI and its commands')
})

// Issue 45, point 1: the folders show the engine. Its rooms (ARCHITECTURE.md) import one another
// downwards only: the runner the operations, the charge and the store; the operations the charge and
// the store. Type-only imports are erased at run time and do not count (as for config/ above): the
// stores read the request's and the outcome's types from core/relay/schemas.ts.
const ENGINE_ROOMS = ['core/relay', 'core/runner', 'core/store', 'core/charge']
// Issue 45, point 3: so does every folder of core/ and config/. core/'s top composes (the app, the
// relay service, the CLI); the leaves every room imports live in folders of their own (core/tool/,
// core/http/) or in the room they belong to, so no cycle runs through the top.
const FOLDERS = ['config', 'core', ...readdirSync(join(ROOT, 'core'), { withFileTypes: true }).filter((entry) => entry.isDirectory()).map((entry) => `core/${entry.name}`)]

/** A cycle through each folder of a graph that has one, as the path back to it (an arrow to itself is no cycle). */
function cyclesOf(arrows: ReadonlyMap<string, ReadonlySet<string>>): string[] {
  const pathBack = (from: string, to: string, seen: string[]): string[] | undefined => {
    if (from === to) return [...seen, to]
    if (seen.includes(from)) return undefined
    for (const next of arrows.get(from) ?? []) {
      const found = next === from ? undefined : pathBack(next, to, [...seen, from])
      if (found) return found
    }
    return undefined
  }
  return [...arrows].flatMap(([room, targets]) => {
    for (const target of targets) {
      const path = target === room ? undefined : pathBack(target, room, [room])
      if (path) return [path.join(' → ')]
    }
    return []
  })
}

t.test('the folders of core/ and config/ (the engine\'s rooms among them): no import cycle spans two of them; every room and file ARCHITECTURE.md names exists', async (t) => {
  // The rule itself, on graphs whose answer is known: it can fail.
  t.same(cyclesOf(new Map([['a', new Set(['b'])], ['b', new Set(['a'])]])), ['a → b → a', 'b → a → b'], 'a cycle is found from each of its folders')
  t.same(cyclesOf(new Map([['a', new Set(['a', 'b'])], ['b', new Set<string>()]])), [], 'a folder importing itself is no cycle')

  const arrows = new Map(FOLDERS.map((room) => [room, new Set<string>()]))
  const imports: string[] = []
  t.ok(FOLDERS.length > 10 && ENGINE_ROOMS.every((room) => FOLDERS.includes(room)), 'the folders are read, the engine\'s rooms among them')
  for (const room of FOLDERS) {
    const names = readdirSync(join(ROOT, room)).filter((name) => name.endsWith('.ts'))
    t.ok(names.length > 0, `${room} holds files`)
    for (const name of names) {
      const file = join(ROOT, room, name)
      // No quote between `import` and `from`: a match never runs on from a package's import to the next line's.
      for (const [, specifier] of readFileSync(file, 'utf8').matchAll(/^(?:import|export)\s+(?!type\s)[^'"]*? from '(\.[^']+)'/gm)) {
        const target = relative(ROOT, dirname(resolve(dirname(file), specifier!)))
        if (!FOLDERS.includes(target) || target === room) continue
        arrows.get(room)!.add(target)
        imports.push(`${room}/${name} → ${relative(ROOT, resolve(dirname(file), specifier!))}`)
      }
    }
  }
  t.ok(arrows.get('core/runner')!.has('core/relay') && arrows.get('core/relay')!.has('core/store'), 'the rooms\' imports are read: the runner imports the operations, the operations the store')
  const cycles = cyclesOf(arrows)
  t.ok(arrows.get('core/rest')!.has('core/http') && arrows.get('core/chain')!.has('core/tool'), 'the leaves\' imports are read: the bindings import core/http/, the chain core/tool/')
  t.same(cycles, [], 'no import cycle spans two folders')
  if (cycles.length > 0) t.comment(`imports between folders: ${imports.join(', ')}`)

  const architecture = readFileSync(join(ROOT, 'ARCHITECTURE.md'), 'utf8')
  const rooms = [...architecture.matchAll(/^\| (`[^|]+`[^|]*) \|/gm)].flatMap(([, cell]) => [...cell!.matchAll(/`([^`]+)`/g)].map(([, path]) => path!))
  for (const room of [...ENGINE_ROOMS, 'core/tool', 'core/http']) t.ok(rooms.includes(`${room}/`), `ARCHITECTURE.md's room table names ${room}/`)
  const named = [...architecture.matchAll(/`((?:core|config|plugins|contracts|examples|test)\/[^`\s]*)`/g)].map(([, path]) => path!).filter((path) => !path.includes('<'))
  t.ok(named.length > 20, 'ARCHITECTURE.md\'s paths are read')
  t.same(named.filter((path) => !existsSync(join(ROOT, path))), [], 'every room and file ARCHITECTURE.md names exists')
})
