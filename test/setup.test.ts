import { readFile, stat } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { parse as parseToml } from 'smol-toml'
import { setupCommand } from '../core/commands/setup.ts'

// `bruno setup` against real files in a temp dir: created, added beside other servers, already
// there, differing (left alone, then --force), commented JSON (printed, not rewritten), TOML.

async function setup(...argv: string[]) {
  let stdout = ''
  let stderr = ''
  const code = await setupCommand.run(argv, { env: {}, stdout: { write: (text: string) => (stdout += text) }, stderr: { write: (text: string) => (stderr += text) } })
  return { code, stdout, stderr }
}

const url = 'https://bruno.example.com'
const endpoint = 'https://bruno.example.com/mcp/erc20,uniswap'
const readJson = async (path: string) => JSON.parse(await readFile(path, 'utf8'))

t.test('a fresh project, no --client: every agent\'s file is created in its own format', async (t) => {
  const dir = t.testdir({})
  const { code, stdout } = await setup('--url', url, '--groups', 'erc20,uniswap', '--dir', dir)
  t.equal(code, 0, stdout)
  t.same(await readJson(join(dir, '.mcp.json')), { mcpServers: { bruno: { type: 'http', url: endpoint } } })
  t.same(await readJson(join(dir, '.cursor/mcp.json')), { mcpServers: { bruno: { url: endpoint } } })
  t.same(await readJson(join(dir, '.vscode/mcp.json')), { servers: { bruno: { type: 'http', url: endpoint } } })
  t.same(await readJson(join(dir, '.gemini/settings.json')), { mcpServers: { bruno: { httpUrl: endpoint } } })
  t.same(parseToml(await readFile(join(dir, '.codex/config.toml'), 'utf8')), { mcp_servers: { bruno: { url: endpoint } } })
  t.match(stdout, /claude: "bruno" created \.mcp\.json/)
})

t.test('an existing JSON config keeps its other servers, keys and indentation', async (t) => {
  const original = JSON.stringify({ theme: 'dark', mcpServers: { other: { command: 'other-server', args: ['--x'] } } }, null, 4) + '\n'
  const dir = t.testdir({ '.mcp.json': original })
  const { code } = await setup('--client', 'claude', '--url', url, '--dir', dir)
  t.equal(code, 0)
  const text = await readFile(join(dir, '.mcp.json'), 'utf8')
  t.same(JSON.parse(text), {
    theme: 'dark',
    mcpServers: { other: { command: 'other-server', args: ['--x'] }, bruno: { type: 'http', url: `${url}/mcp` } },
  })
  t.match(text, /^ {4}"theme"/m, 'four-space indentation kept')
  t.ok(text.endsWith('}\n'))
})

t.test('an entry already there: nothing is written', async (t) => {
  const original = '{"servers":{"bruno":{"type":"http","url":"https://bruno.example.com/mcp","headers":{"x-token":"t"}}}}'
  const dir = t.testdir({ '.vscode': { 'mcp.json': original } })
  const path = join(dir, '.vscode/mcp.json')
  const before = await stat(path)
  const { code, stdout } = await setup('--client', 'vscode', '--url', url, '--dir', dir)
  t.equal(code, 0)
  t.match(stdout, /already in \.vscode\/mcp\.json/)
  t.equal(await readFile(path, 'utf8'), original, 'same bytes')
  t.equal((await stat(path)).mtimeMs, before.mtimeMs, 'not rewritten')
})

t.test('a differing entry is left alone, and replaced with --force', async (t) => {
  const original = JSON.stringify({ mcpServers: { bruno: { httpUrl: 'http://old.example/mcp' }, keep: { httpUrl: 'http://keep.example/mcp' } } })
  const dir = t.testdir({ '.gemini': { 'settings.json': original } })
  const path = join(dir, '.gemini/settings.json')
  const left = await setup('--client', 'gemini', '--url', url, '--dir', dir)
  t.equal(left.code, 1, 'not configured: exit 1')
  t.match(left.stdout, /left alone .*--force replaces it/)
  t.match(left.stdout, /"httpUrl": "https:\/\/bruno\.example\.com\/mcp"/, 'the wanted entry is shown')
  t.equal(await readFile(path, 'utf8'), original)

  const forced = await setup('--client', 'gemini', '--url', url, '--dir', dir, '--force')
  t.equal(forced.code, 0)
  t.same(await readJson(path), { mcpServers: { bruno: { httpUrl: `${url}/mcp` }, keep: { httpUrl: 'http://keep.example/mcp' } } })
})

t.test('commented JSON is not rewritten: the entry is printed instead', async (t) => {
  const original = '{\n  // my servers\n  "mcpServers": {\n    "other": { "url": "http://other.example/mcp" }, // trailing\n  },\n}\n'
  const dir = t.testdir({ '.cursor': { 'mcp.json': original } })
  const { code, stdout } = await setup('--client', 'cursor', '--url', url, '--dir', dir)
  t.equal(code, 1)
  t.match(stdout, /not written to \.cursor\/mcp\.json: not plain JSON/)
  t.same(JSON.parse(stdout.slice(stdout.indexOf('{'))), { mcpServers: { bruno: { url: `${url}/mcp` } } }, 'the printed entry is the one to paste')
  t.equal(await readFile(join(dir, '.cursor/mcp.json'), 'utf8'), original)
})

t.test('Codex TOML: comments and other tables kept; --force swaps the table in place', async (t) => {
  const original = '# Codex settings\nmodel = "o4"\n\n[mcp_servers.other]\ncommand = "other" # stdio\n'
  const dir = t.testdir({ '.codex': { 'config.toml': original } })
  const path = join(dir, '.codex/config.toml')
  t.equal((await setup('--client', 'codex', '--url', url, '--dir', dir)).code, 0)
  const added = await readFile(path, 'utf8')
  t.ok(added.startsWith(original), 'the file as it was, then the new table')
  t.same(parseToml(added), { model: 'o4', mcp_servers: { other: { command: 'other' }, bruno: { url: `${url}/mcp` } } })

  t.equal((await setup('--client', 'codex', '--url', url, '--dir', dir)).code, 0)
  t.equal(await readFile(path, 'utf8'), added, 'already there: unchanged')

  const differing = '# top\n[mcp_servers.bruno]\nurl = "http://old.example/mcp"\n\n[mcp_servers.bruno.env]\nA = "b"\n\n[profiles.x]\nmodel = "y" # keep me\n'
  await import('node:fs/promises').then(({ writeFile }) => writeFile(path, differing))
  const left = await setup('--client', 'codex', '--url', url, '--dir', dir)
  t.equal(left.code, 1)
  t.equal(await readFile(path, 'utf8'), differing)
  t.equal((await setup('--client', 'codex', '--url', url, '--dir', dir, '--force')).code, 0)
  const replaced = await readFile(path, 'utf8')
  t.same(parseToml(replaced), { mcp_servers: { bruno: { url: `${url}/mcp` } }, profiles: { x: { model: 'y' } } })
  t.match(replaced, /# top\n/)
  t.match(replaced, /model = "y" # keep me/)
})

t.test('bad arguments are refused; --help lists every flag', async (t) => {
  t.equal((await setup('--client', 'claude,emacs')).code, 2)
  t.equal((await setup('--client', 'emacs')).code, 2)
  t.equal((await setup('--client', 'claude', '--groups', 'a b')).code, 2)
  t.equal((await setup('--client', 'claude', '--url', 'ftp://x')).code, 2)
  const help = await setup('--help')
  t.equal(help.code, 0)
  for (const flag of ['--client', '--url', '--groups', '--name', '--dir', '--force', '--help']) t.match(help.stdout, flag)
})

t.test('--client takes a comma-separated list', async (t) => {
  const dir = t.testdir({})
  t.equal((await setup('--client', 'claude,codex', '--dir', dir)).code, 0)
  t.same(await readJson(join(dir, '.mcp.json')), { mcpServers: { bruno: { type: 'http', url: 'http://127.0.0.1:3030/mcp' } } })
  t.ok((await stat(join(dir, '.codex/config.toml'))).isFile())
  await t.rejects(stat(join(dir, '.cursor/mcp.json')), { code: 'ENOENT' }, 'only the named agents')
})

t.test('refusals: an unknown group, a missing --dir (nothing is written)', async (t) => {
  const dir = t.testdir({})
  const unknown = await setup('--groups', 'erc20,nosuch', '--dir', dir)
  t.equal(unknown.code, 2)
  t.match(unknown.stderr, /--groups: no group "nosuch"; Bruno's groups are bruno, calibur, metamask, 3009, erc20, uniswap/)
  t.equal(unknown.stdout, '')
  await t.rejects(stat(join(dir, '.mcp.json')), 'nothing written')

  const missing = join(dir, 'no-such-project')
  const noDir = await setup('--dir', missing)
  t.equal(noDir.code, 2)
  t.match(noDir.stderr, /--dir: .*no-such-project is not an existing directory/)
  await t.rejects(stat(missing), 'the directory is not created')

  const file = join(t.testdir({ 'a-file': 'x' }), 'a-file')
  t.equal((await setup('--dir', file)).code, 2, 'a file is not a directory')
})
