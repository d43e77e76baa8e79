import { request as httpRequest } from 'node:http'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer, type AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { spawnSync } from 'node:child_process'
import t from 'tap'
import { ConfigError, loadConfig, parseConfig, parseServerConfig } from '../config/load.ts'
import { loadCheckedConfig } from '../config/loadGroups.ts'
import type { Command } from '../core/commands/command.ts'
import { deployCommand } from '../core/commands/deploy.ts'
import { preflightCommand } from '../core/commands/preflight.ts'
import { setupCommand } from '../core/commands/setup.ts'
import { sweepCommand } from '../core/commands/sweep.ts'
import { checkServeFlags, FlagError } from '../core/commands/serveFlags.ts'
import { builtinGroups } from '../plugins/index.ts'
import { offlineConfig, OFFLINE_RPC_URL, OFFLINE_RUNNER_KEY, startBruno } from './fixtures/bruno.ts'
import { spawnOwned } from './fixtures/ownedProcess.ts'

// One config check, strict, for `serve` and `preflight` alike: each refusal names the key and the
// fix. Addresses whose mixed case is not their EIP-55 checksum, JSON that is not JSON (line and
// column), keys the schema does not know (the nearest known one), groups nothing installs, and the
// command line's flags and port, refused before a devnet is deployed.

const env = { BRUNO_TEST_RPC_URL: OFFLINE_RPC_URL, BRUNO_TEST_RUNNER_KEY: OFFLINE_RUNNER_KEY }
/** The offline config as a plain file would hold it, for tests to spoil one field of. */
function rawConfig(): any {
  return JSON.parse(JSON.stringify(offlineConfig({ ...env })))
}

const dir = await mkdtemp(join(tmpdir(), 'bruno-config-strict-'))
t.teardown(() => rm(dir, { recursive: true, force: true }))
let files = 0
async function file(text: string): Promise<string> {
  const path = join(dir, `bruno-${++files}.json`)
  await writeFile(path, text)
  return path
}

t.test('an address whose mixed case is not its EIP-55 checksum is refused, naming the field; one case only is taken as written', async (t) => {
  const payee = '0xa0Ee7A142d267C1f36714E4a8F75612F20a79720'
  const misTyped = '0xa0Ee7A142d267C1f36714E4a8F75612F20a79721' // one digit off: the checksum catches it
  const wrongCase = '0xA0ee7A142d267C1f36714E4a8F75612F20a79720'
  const fix = 'a character is likely mistyped. Copy the address again from its source (a checksummed address, or all lowercase to skip the check)'
  for (const [where, spoil] of [
    ['networks[0].payee', (config: any, address: string) => (config.networks[0].payee = address)],
    ['networks[0].tokens[0].address', (config: any, address: string) => (config.networks[0].tokens[0].address = address)],
    ['networks[0].tokens[0].swapPath[0].tokenOut', (config: any, address: string) => (config.networks[0].tokens[0].swapPath[0].tokenOut = address)],
    ['networks[0].runner.contract', (config: any, address: string) => (config.networks[0].runner.contract = address)],
    ['networks[0].uniswap.quoterV2', (config: any, address: string) => (config.networks[0].uniswap.quoterV2 = address)],
  ] as const) {
    for (const bad of [misTyped, wrongCase]) {
      const config = rawConfig()
      spoil(config, bad)
      t.throws(() => parseConfig(config, env), new ConfigError(`config ${where}: ${bad} is not a valid EIP-55 checksum (its mix of upper and lower case does not match the address): ${fix}`))
    }
  }
  for (const fine of [payee, payee.toLowerCase(), `0x${payee.slice(2).toUpperCase()}`]) {
    const config = rawConfig()
    config.networks[0].payee = fine
    t.equal(parseConfig(config, env).networks[0]!.payee, fine, `${fine} is accepted`)
  }
})

t.test('a file that is not JSON is reported with its line and column and what was expected, never quoted', async (t) => {
  const cases: [string, string][] = [
    ['{\n  "groups": ["erc20", "uniswap",],\n  "networks": []\n}\n', 'line 2, column 32: a trailing comma before "]" (JSON allows none)'],
    ['{\n  "server": { "port": 3030 },\n}', 'line 2, column 29: a trailing comma before "}" (JSON allows none)'],
    ['{\n  "server": { "port": 3030 }\n  "groups": []\n}', 'line 3, column 3: expected "," or "}" after a value, found """'],
    ["{\n  'groups': []\n}", 'line 2, column 3: expected a double-quoted key, found "\'" (JSON strings take double quotes)'],
    ['{\n  "server": { "host": "127.0.0.1 }\n}', 'line 2, column 35: a string runs past the end of its line (no ending ")'],
    ['{\n  "server": { "port": 03030 }\n}', 'line 2, column 23: a malformed number (JSON numbers have no leading zeros, a digit after "." and no hex)'],
    ['{\n  "server": {\n', 'line 3, column 1: expected a double-quoted key, found the end of the file'],
    ['{ "groups": [] } x', 'line 1, column 18: more after the end of the JSON value: "x"'],
  ]
  for (const [text, where] of cases) {
    const path = await file(text)
    await t.rejects(loadConfig(path, env), new ConfigError(`config file ${path} is not valid JSON: ${where}`), where)
  }
  // A byte order mark is no mistake.
  const bom = rawConfig()
  t.equal((await loadConfig(await file(`\uFEFF${JSON.stringify(bom)}`), env)).networks[0]!.name, 'local')
})

t.test('a swapPath that does not end at the network\'s WETH is refused, one hop or several (issue 28, point 1)', async (t) => {
  // Accepted, a USDC→DAI path would value every payment in DAI per USDC (≈1) as if it were WETH per USDC (≈1/3,000).
  const dai = '0x50c5725949A6F0c72E6C4a641F24049A917DB0Cb'
  const withPath = (swapPath: { fee: number; tokenOut: string }[]) => {
    const config = rawConfig()
    config.networks[0].tokens[0].swapPath = swapPath
    return () => parseConfig(config, env)
  }
  const refusal = new ConfigError('config networks[0].tokens[0].swapPath: the last hop must end at the network\'s WETH')
  t.throws(withPath([{ fee: 100, tokenOut: dai }]), refusal, 'one hop, to DAI')
  t.throws(withPath([{ fee: 500, tokenOut: '0x4200000000000000000000000000000000000006' }, { fee: 100, tokenOut: dai }]), refusal, 'through WETH, ending at DAI')
  t.throws(withPath([{ fee: 100, tokenOut: dai }, { fee: 100, tokenOut: dai }]), refusal, 'two hops, neither to WETH')
  t.doesNotThrow(withPath([{ fee: 100, tokenOut: dai }, { fee: 500, tokenOut: '0x4200000000000000000000000000000000000006' }]), 'through DAI to WETH')
  t.doesNotThrow(withPath([{ fee: 500, tokenOut: '0x4200000000000000000000000000000000000006' }]), 'straight to WETH')
})

t.test('an unknown key is named, with the nearest known key or the keys there are', async (t) => {
  const spoiled = (spoil: (config: any) => void) => {
    const config = rawConfig()
    spoil(config)
    return () => parseConfig(config, env)
  }
  t.throws(
    spoiled((config) => {
      config.networks[0].runner.contarct = config.networks[0].runner.contract
      delete config.networks[0].runner.contract
    }),
    new ConfigError('config networks[0].runner.contarct: unknown key; did you mean "contract"?'),
    'reported before the missing key it was meant to be',
  )
  t.throws(spoiled((config) => (config.netwroks = config.networks)), new ConfigError('config netwroks: unknown key; did you mean "networks"?'))
  t.throws(spoiled((config) => (config.server.rateLimit = { maxx: 10 })), new ConfigError('config server.rateLimit.maxx: unknown key; did you mean "max"?'))
  t.throws(spoiled((config) => (config.networks[0].tokens[1].swappath = [])), new ConfigError('config networks[0].tokens[1].swappath: unknown key; did you mean "swapPath"?'))
  t.throws(spoiled((config) => (config.server.trustproxy = true)), new ConfigError('config server.trustproxy: unknown key; did you mean "trustProxy"?'))
  t.throws(
    spoiled((config) => (config.store.flavour = 'x')),
    new ConfigError('config store.flavour: unknown key; the keys here are: "kind", "path"'),
    'nothing near: the keys there are',
  )
  // Through the file, as serve and preflight read it.
  const path = await file(JSON.stringify({ ...rawConfig(), plugin: [] }))
  await t.rejects(loadConfig(path, env), new ConfigError('config plugin: unknown key; did you mean "plugins"?'))
})

t.test('a group\'s options on a chain (networks[].groupOptions): checked by its own schema, defaults filled; the old calibur key says where it went', async (t) => {
  const withOptions = (groupOptions: unknown) => {
    const config = rawConfig()
    config.groups = ['bruno', 'calibur']
    config.networks[0].groupOptions = groupOptions
    return file(JSON.stringify(config))
  }
  const calibur = (loaded: Awaited<ReturnType<typeof loadCheckedConfig>>) => loaded.groups.find((group) => group.definition.name === 'calibur')!.networkOptions.get('local')
  // None given: Calibur's own address.
  t.same(calibur(await loadCheckedConfig(await withOptions(undefined), env, builtinGroups)), { address: '0x000000005c84F8Fd50b21CAC312528A64437030e' })
  const moved = '0x00000000000000000000000000000000000Ca11b'
  t.same(calibur(await loadCheckedConfig(await withOptions({ calibur: { address: moved } }), env, builtinGroups)), { address: moved })
  const refusals: [unknown, string][] = [
    [{ calibur: { address: 'calibur' } }, 'config networks[0].groupOptions.calibur (group "calibur", built in).address: Expected string to match \'^0x[0-9a-fA-F]{40}$\''],
    [{ calibur: { adress: moved } }, 'config networks[0].groupOptions.calibur (group "calibur", built in).adress: Unexpected property'],
    [
      { calibur: { address: '0x00000000000000000000000000000000000CA11b' } },
      'config networks[0].groupOptions.calibur.address: 0x00000000000000000000000000000000000CA11b is not a valid EIP-55 checksum (its mix of upper and lower case does not match the address): a character is likely mistyped. Copy the address again from its source (a checksummed address, or all lowercase to skip the check)',
    ],
    [{ bruno: { x: 1 } }, 'config networks[0].groupOptions.bruno (group "bruno", built in): the group takes no options on a chain'],
    [{ calibr: {} }, 'config networks[0].groupOptions.calibr: no group "calibr" is installed (installed: bruno, calibur, metamask, 3009, erc20, uniswap); did you mean "calibur"?'],
  ]
  for (const [groupOptions, message] of refusals) await t.rejects(loadCheckedConfig(await withOptions(groupOptions), env, builtinGroups), new ConfigError(message))
  // A config written before Calibur's address became the group's option.
  const old = rawConfig()
  old.networks[0].calibur = '0x000000005c84F8Fd50b21CAC312528A64437030e'
  t.throws(
    () => parseConfig(old, env),
    new ConfigError(
      'config networks[0].calibur: the delegate\'s address is now the calibur group\'s option on the chain, networks[0].groupOptions.calibur.address, and defaults to ' +
        "Calibur's own address (0x000000005c84F8Fd50b21CAC312528A64437030e, the same on every chain): delete the key, or move a different address there",
    ),
  )
  // Any other unknown network key is still named with the nearest known one.
  const typo = rawConfig()
  typo.networks[0].groupoptions = {}
  t.throws(() => parseConfig(typo, env), new ConfigError('config networks[0].groupoptions: unknown key; did you mean "groupOptions"?'))
})

t.test('serve and preflight refuse the same config: a group nothing installs, a plugin that cannot be loaded', async (t) => {
  const typo = await file(JSON.stringify({ ...rawConfig(), groups: ['bruno', 'erc2'] }))
  const message = 'config groups: no group "erc2" is installed (installed: bruno, calibur, metamask, 3009, erc20, uniswap); did you mean "erc20"?'
  await t.rejects(loadCheckedConfig(typo, env, builtinGroups), new ConfigError(message), 'serve\'s check')
  let output = ''
  const code = await preflightCommand.run(['--config', typo], { env, stdout: { write: (text: string) => (output += text) }, stderr: { write: (text: string) => (output += text) } }).catch((error: Error) => {
    output += error.message
    return 1
  })
  t.equal(code, 1)
  t.equal(output, message, 'preflight refuses it too, with the same words, before checking any chain')
  const plugin = await file(JSON.stringify({ ...rawConfig(), plugins: [{ from: './no-such-group' }] }))
  await t.rejects(
    preflightCommand.run(['--config', plugin], { env, stdout: { write: () => true }, stderr: { write: () => true } }),
    new ConfigError('config plugins[0].from: "./no-such-group" does not exist (paths are relative to the config file)'),
  )
})

t.test('a mistyped or valueless flag, on bruno and each command: the nearest flag named, exit 2, nothing started (issue 49, point 8)', async (t) => {
  // As a process once: cli.ts prints a command's FlagError after "bruno: " and exits 2.
  const cli = join(import.meta.dirname, '../core/cli.ts')
  const ran = spawnSync(process.execPath, ['--import=tsx', cli, '--confg', 'bruno.json'], { encoding: 'utf8', env: { ...process.env, ...env } })
  t.equal(ran.status, 2, 'bruno --confg bruno.json: exit 2')
  t.equal(ran.stderr.trim(), 'bruno: unknown flag --confg: did you mean --config? (bruno --help lists every flag)')
  t.equal(ran.stdout, '', 'nothing started')
  // Each command's own flags, refused by the command before it does anything.
  const cases: [Command, string[], string][] = [
    [deployCommand, ['--treasuy', '0x0'], 'unknown flag --treasuy: did you mean --treasury? (bruno deploy --help lists every flag)'],
    [sweepCommand, ['--chian', 'base'], 'unknown flag --chian: did you mean --chain? (bruno sweep --help lists every flag)'],
    [preflightCommand, ['--config'], '--config needs a value (bruno preflight --help lists every flag)'],
    [setupCommand, ['--zzz'], 'unknown flag --zzz (bruno setup --help lists every flag)'],
  ]
  for (const [command, args, message] of cases) {
    let written = ''
    const io = { env: { ...process.env, ...env }, stdout: { write: (text: string) => (written += text) }, stderr: { write: (text: string) => (written += text) } }
    await t.rejects(command.run(args, io), new FlagError(message), `bruno ${command.name} ${args.join(' ')}`)
    t.equal(written, '', 'nothing started')
  }
})

t.test('serve\'s flags: each refusal names the flag and what it takes', async (t) => {
  const refuses = (values: Parameters<typeof checkServeFlags>[0], message: string) => t.throws(() => checkServeFlags(values), new FlagError(message), message)
  refuses({ port: '70000' }, '--port: "70000" is not a port: give an integer from 0 to 65535 (0 = any free port)')
  refuses({ port: '3o30' }, '--port: "3o30" is not a port: give an integer from 0 to 65535 (0 = any free port)')
  refuses({ port: '-1' }, '--port: "-1" is not a port: give an integer from 0 to 65535 (0 = any free port)')
  refuses({ 'log-level': 'debgu' }, '--log-level: "debgu" is not a level; did you mean "debug"?')
  refuses({ 'log-level': 'verbose' }, '--log-level: "verbose" is not a level; the levels are: "fatal", "error", "warn", "info", "debug", "trace", "silent"')
  refuses({ host: 'bad host' }, '--host: "bad host" is not an IP address or host name (e.g. 127.0.0.1, ::1, 0.0.0.0, localhost)')
  refuses({ as: 'base', config: 'bruno.json' }, '--as gives the devnet a preset\'s identity; with --config, name the preset in the config file ("preset" in a networks entry) instead')
  refuses({ plugin: ['./my-group'], config: 'bruno.json' }, '--plugin serves a group on the devnet; with --config, name it in the config file ("plugins" and "groups") instead')
  t.same(checkServeFlags({ port: '0', host: '::1', 'log-level': 'debug', as: 'base' }), { plugins: [], host: '::1', port: 0, logLevel: 'debug', as: 'base' })
  t.same(checkServeFlags({ plugin: ['./a', 'b-group'] }).plugins, ['./a', 'b-group'], 'each --plugin, in order')
  refuses({ lanes: '4', config: 'bruno.json' }, '--lanes gives the devnet runner keys; with --config, list them in the config file (runner.lanes) instead')
  refuses({ lanes: '0' }, '--lanes: "0" is not a number of lanes: give an integer from 1 to 64')
  refuses({ lanes: 'four' }, '--lanes: "four" is not a number of lanes: give an integer from 1 to 64')
  t.equal(checkServeFlags({ lanes: '16' }).lanes, 16, '--lanes 16')
  // --host is checked with the config's rules: off loopback, allowedHosts must name the hosts.
  t.throws(() => parseServerConfig({ host: '0.0.0.0', port: 3030 }), { name: 'ConfigError', message: /^config server\.allowedHosts: required when server\.host is not a loopback address/ })
  const path = await file(JSON.stringify(rawConfig()))
  await t.rejects(loadConfig(path, env, { server: { host: '0.0.0.0' } }), { name: 'ConfigError', message: /^config server\.allowedHosts: required when server\.host is not a loopback address/ }, '--host over a file')
  t.equal((await loadConfig(path, env, { server: { port: 4321 } })).server.port, 4321, '--port over a file')
})

/** `bruno …` as a process: its exit code and output once it exits (or is killed after `ms`). */
function cli(args: string[], processEnv: NodeJS.ProcessEnv = process.env, ms = 20_000) {
  const child = spawnOwned(t, process.execPath, ['--import=tsx', join(import.meta.dirname, '../core/cli.ts'), ...args], { env: processEnv, cwd: join(import.meta.dirname, '..') })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk) => (stdout += chunk))
  child.stderr.on('data', (chunk) => (stderr += chunk))
  const timer = setTimeout(() => child.kill('SIGKILL'), ms)
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.once('exit', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    }),
  )
}

t.test('the command line: flags, the server section and the port are refused before the devnet deploys', async (t) => {
  const badPort = await cli(['--port', '99999'])
  t.equal(badPort.code, 2)
  t.match(badPort.stderr, /--port: "99999" is not a port/)
  t.notMatch(badPort.stdout, /Starting the devnet/, 'no devnet for a typo')

  const offLoopback = await cli(['--host', '0.0.0.0'])
  t.equal(offLoopback.code, 1)
  t.match(offLoopback.stderr, /config server\.allowedHosts: required when server\.host is not a loopback address/)
  t.notMatch(offLoopback.stdout, /Starting the devnet/)

  const taken = createServer()
  await new Promise<void>((resolve) => taken.listen({ host: '127.0.0.1', port: 0 }, resolve))
  t.teardown(() => new Promise<void>((resolve) => taken.close(() => resolve())))
  const port = (taken.address() as AddressInfo).port
  const busy = await cli(['--port', String(port)])
  t.equal(busy.code, 2)
  t.match(busy.stderr, `cannot listen on 127.0.0.1:${port}: another process is listening there (stop it, or choose another port: --port or server.port)`)
  t.notMatch(busy.stdout, /Starting the devnet/, 'the port is tried before the devnet deploys')

  // With a config file: the port is tried before preflight reads any chain (this one's RPC is not there).
  const path = await file(JSON.stringify(rawConfig()))
  const busyConfig = await cli(['--config', path, '--port', String(port)], { ...process.env, ...env })
  t.equal(busyConfig.code, 2)
  t.match(busyConfig.stderr, `cannot listen on 127.0.0.1:${port}: another process is listening there`)
  t.notMatch(busyConfig.stderr, /preflight|unavailable/)
})

/** An MCP ping to `url` through a proxy that says the request came for `forwardedFor`: its HTTP status. */
const ping = (url: string, forwardedFor: string) =>
  fetch(`${url}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-forwarded-for': forwardedFor, 'mcp-protocol-version': '2025-06-18' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
  }).then((response) => response.status)

t.test('server.trustProxy: behind a proxy, the client address (the rate limit\'s key) is the forwarded one only when trusted', async (t) => {
  const limited = { host: '127.0.0.1', port: 0, rateLimit: { max: 1, windowMs: 60_000 } }
  const direct = await startBruno(t, offlineConfig({ ...env }, { server: limited }), { ...env })
  t.equal(await ping(direct.server.url, '203.0.113.1'), 200)
  t.equal(await ping(direct.server.url, '203.0.113.2'), 429, 'untrusted: both clients are the proxy, one bucket')
  const proxied = await startBruno(t, offlineConfig({ ...env }, { server: { ...limited, trustProxy: ['127.0.0.1'] } }), { ...env })
  t.equal(await ping(proxied.server.url, '203.0.113.1'), 200)
  t.equal(await ping(proxied.server.url, '203.0.113.2'), 200, 'trusted: each forwarded client its own bucket')
  t.equal(await ping(proxied.server.url, '203.0.113.1'), 429, 'and each bucket still limited')
  t.throws(() => offlineConfig({ ...env }, { server: { ...limited, trustProxy: 'yes' } }), { name: 'ConfigError', message: /^config server\.trustProxy: / })
})

t.test('server.trustProxy as a number of hops: a client\'s forged X-Forwarded-For entries are not its address (issue 28, point 3)', async (t) => {
  const limited = { host: '127.0.0.1', port: 0, rateLimit: { max: 2, windowMs: 60_000 } }
  // One proxy in front (here the test, on loopback), which appends the address it saw: the client's own entries come first.
  const oneHop = await startBruno(t, offlineConfig({ ...env }, { server: { ...limited, trustProxy: 1 } }), { ...env })
  t.equal(await ping(oneHop.server.url, '198.51.100.1, 203.0.113.9'), 200)
  t.equal(await ping(oneHop.server.url, '198.51.100.2, 203.0.113.9'), 200)
  t.equal(await ping(oneHop.server.url, '10.0.0.1, 198.51.100.3, 203.0.113.9'), 429, 'forged entries, one client: one bucket, its limit reached')
  t.equal(await ping(oneHop.server.url, '198.51.100.1, 203.0.113.10'), 200, 'another client the proxy saw: its own bucket')
  // Trusting one hop too many makes the client's own last entry its address: each forgery a fresh bucket.
  const twoHops = await startBruno(t, offlineConfig({ ...env }, { server: { ...limited, trustProxy: 2 } }), { ...env })
  const forged = await Promise.all([1, 2, 3, 4].map((index) => ping(twoHops.server.url, `198.51.100.${index}, 203.0.113.9`)))
  t.same(forged, [200, 200, 200, 200], 'what an over-trusting config lets through (why the hop count must be the proxies in front)')
})

t.test('server.allowedHosts without a loopback name: the banner gives clients the host that answers and the probe its Host (issue 29, point 7)', async (t) => {
  const config = rawConfig()
  config.server = { ...config.server, port: 0, allowedHosts: ['bruno.example.com'] }
  const path = await file(JSON.stringify(config))
  const child = spawnOwned(t, process.execPath, ['--import=tsx', join(import.meta.dirname, '../core/cli.ts'), 'serve', '--config', path, '--no-preflight'], {
    env: { ...process.env, ...env },
    cwd: join(import.meta.dirname, '..'),
  })
  let banner = ''
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk) => {
      banner += chunk
      if (banner.includes('Ctrl-C stops Bruno')) resolve()
    })
    child.once('exit', (code) => reject(new Error(`bruno exited ${code} before its banner: ${banner}`)))
  })
  const local = /Bruno is serving MCP at (http:\/\/127\.0\.0\.1:(\d+))\/mcp/.exec(banner)!
  const [, url, port] = local
  t.match(banner, `answered only for Host bruno.example.com (server.allowedHosts): a request to ${url} without it is refused (403).`)
  t.match(banner, '"url": "https://bruno.example.com/mcp"', 'the client configuration names the host that answers')
  t.match(banner, 'npm run bruno -- setup --url https://bruno.example.com', 'from a checkout: its npm script (a package install prints npx bruno)')
  t.match(banner, '(one group only: https://bruno.example.com/mcp/<group>, several: https://bruno.example.com/mcp/', 'the per-group URLs by the host that answers, not the address that refuses (issue 49, point 7)')
  const probe = /curl -H 'Host: ([^']+)' (\S+)\/healthz/.exec(banner)!
  t.equal(probe[1], 'bruno.example.com')
  t.equal(probe[2], url)
  // The probe as printed answers; without its Host, the address refuses.
  const status = (host?: string) =>
    new Promise<number>((resolve, reject) => {
      const request = httpRequest({ host: '127.0.0.1', port: Number(port), path: '/healthz', headers: host ? { host } : {} }, (response) => {
        response.resume()
        resolve(response.statusCode!)
      })
      request.once('error', reject)
      request.end()
    })
  t.equal(await status(probe[1]), 200, 'with the printed Host: 200')
  t.equal(await status(), 403, 'without: 403')
  child.kill('SIGTERM')
})
