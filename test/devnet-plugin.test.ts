import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import t from 'tap'
import { createPublicClient, createWalletClient, decodeEventLog, http, parseAbi, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { spawnOwned } from './fixtures/ownedProcess.ts'

// `npm start -- --plugin <path>`: the devnet serves a third party's group beside the built-in ones,
// its `devnet` hook having deployed what it needs on the fresh chain. The example group
// (examples/hello-group) deploys a real guestbook; signing it through the group's call works there.

const repo = new URL('..', import.meta.url).pathname
const cli = ['--import', 'tsx', 'core/cli.ts']

/** `bruno …` until it prints its banner, or exits: its output and exit code. */
function start(args: string[]) {
  const child = spawnOwned(t, process.execPath, [...cli, ...args], { cwd: repo, env: { ...process.env } })
  let stdout = ''
  let stderr = ''
  child.stderr.on('data', (chunk) => (stderr += chunk))
  return new Promise<{ banner?: string; code?: number | null; stderr: string }>((resolve) => {
    child.stdout.on('data', (chunk) => {
      stdout += chunk
      if (/Ctrl-C stops Bruno and the devnet\./.test(stdout)) resolve({ banner: stdout, stderr })
    })
    child.once('exit', (code) => resolve({ code, stderr }))
  })
}

t.test('the example group on the devnet: served, its guestbook deployed by its hook, its call signs it', async (t) => {
  const { banner, stderr } = await start(['--port', '0', '--log-level', 'warn', '--plugin', './examples/hello-group'])
  t.ok(banner, `the banner: ${stderr}`)
  const mcpUrl = /Bruno is serving MCP at (\S+)/.exec(banner!)![1]!
  const rpcUrl = /RPC URL: (http:\/\/127\.0\.0\.1:\d+)/.exec(banner!)![1]!
  const sdk = new Client({ name: 'bruno-tests', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } })
  await sdk.connect(new StreamableHTTPClientTransport(new URL(mcpUrl)))
  t.teardown(() => sdk.close())
  const names = (await sdk.listTools()).tools.map((tool) => tool.name)
  t.ok(names.includes('hello_greet') && names.includes('hello_sign_guestbook'), 'the group\'s tools are listed')
  t.ok(names.includes('submit') && names.includes('calibur_batch'), 'beside the built-in ones')

  const signed = await sdk.callTool({ name: 'hello_sign_guestbook', arguments: { chain: 'local', message: 'gm from the devnet' } })
  const [call] = (signed.structuredContent as { calls: { to: Hex; data: Hex }[] }).calls
  const chain = createPublicClient({ transport: http(rpcUrl) })
  t.not(await chain.getCode({ address: call!.to }), undefined, 'the guestbook the options name has code')
  const key = /(0x[0-9a-fA-F]{40}) {2}key (0x[0-9a-f]{64})/.exec(banner!)![2] as Hex
  const signer = privateKeyToAccount(key)
  const wallet = createWalletClient({ account: signer, transport: http(rpcUrl) })
  const receipt = await chain.waitForTransactionReceipt({ hash: await wallet.sendTransaction({ to: call!.to, data: call!.data, chain: null }) })
  t.equal(receipt.status, 'success')
  const event = decodeEventLog({ abi: parseAbi(['event Signed(address indexed by, string message)']), data: receipt.logs[0]!.data, topics: receipt.logs[0]!.topics })
  t.same(event.args, { by: signer.address, message: 'gm from the devnet' }, 'the guestbook recorded who signed what')
})

t.test('--plugin refusals name the flag and what to fix', async (t) => {
  const missing = await start(['--port', '0', '--plugin', './no-such-group'])
  t.equal(missing.code, 1)
  t.match(missing.stderr, /^bruno: --plugin: "\.\/no-such-group" does not exist \(paths are relative to the working directory\)$/m)
  // --plugin beside --config is a serve flag's refusal: checkServeFlags in test/config-strict.test.ts, exit 2 as a process there.
})
