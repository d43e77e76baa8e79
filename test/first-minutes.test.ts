import t from 'tap'
import { createPublicClient, erc20Abi, http } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { spawnOwned } from './fixtures/ownedProcess.ts'
import { waitFor } from './fixtures/waitFor.ts'

// The first five minutes: `npm start`'s banner names the devnet's RPC URL, the demo accounts with
// their keys (one with USDC and 0 ETH, undelegated) and three calls to try, which work as printed;
// routine probes (GET /mcp → 405) write nothing at info.

const repo = new URL('..', import.meta.url).pathname
const child = spawnOwned(t, process.execPath, ['--import', 'tsx', 'core/cli.ts', '--port', '0'], { cwd: repo, env: { ...process.env } })
let stdout = ''
let stderr = ''
child.stderr.on('data', (chunk) => (stderr += chunk))
const banner = await new Promise<string>((resolve, reject) => {
  const timer = setTimeout(() => reject(new Error(`no banner in 120 s:\n${stdout}\n${stderr}`)), 120_000)
  child.stdout.on('data', (chunk) => {
    stdout += chunk
    if (/Ctrl-C stops Bruno and the devnet\./.test(stdout)) {
      clearTimeout(timer)
      resolve(stdout)
    }
  })
  child.once('exit', (code) => reject(new Error(`bruno exited ${code}:\n${stdout}\n${stderr}`)))
})
const mcp = /Bruno is serving MCP at (\S+)/.exec(banner)![1]!

t.test('the banner: the RPC URL, the demo accounts and their keys, three calls', async (t) => {
  const rpcUrl = /RPC URL: (http:\/\/127\.0\.0\.1:\d+)/.exec(banner)?.[1]
  t.ok(rpcUrl, 'the devnet\'s RPC URL is printed')
  t.notMatch(banner, /BRUNO_DEVNET_RPC_URL/, 'not a pointer to an environment variable')
  const accounts = [...banner.matchAll(/(0x[0-9a-fA-F]{40}) {2}key (0x[0-9a-f]{64})/g)]
  t.equal(accounts.length, 4, 'four demo accounts')
  for (const [, address, key] of accounts) t.equal(privateKeyToAccount(key as `0x${string}`).address, address, 'each key is its account\'s')
  const noEth = /(0x[0-9a-fA-F]{40}) {2}key \S+ {2}\(0 ETH, not delegated/.exec(banner)?.[1] as `0x${string}`
  t.ok(noEth, 'one account is marked 0 ETH')
  const usdc = /USDC (0x[0-9a-fA-F]{40})/.exec(banner)![1] as `0x${string}`
  const client = createPublicClient({ transport: http(rpcUrl) })
  t.equal(await client.getBalance({ address: noEth }), 0n, 'it holds no ETH')
  t.equal(await client.readContract({ address: usdc, abi: erc20Abi, functionName: 'balanceOf', args: [noEth] }), 10_000_000_000n, 'and 10,000 USDC')
  t.equal(await client.getCode({ address: noEth }), undefined, 'undelegated')

  // The three calls, as printed.
  const calls = [...banner.matchAll(/curl -s (\S+) -H 'content-type: application\/json' -d '(.+)'$/gm)]
  t.equal(calls.length, 3, 'three calls to try')
  const answers = []
  for (const [, url, body] of calls) {
    const reply = await fetch(url!, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
    t.equal(reply.status, 200)
    answers.push(((await reply.json()) as { result: { tools?: unknown[]; structuredContent?: Record<string, unknown>; isError?: boolean } }).result)
  }
  t.ok(answers[0]!.tools!.length > 5, 'tools/list answers')
  t.equal(answers[1]!.isError, undefined)
  t.match(answers[1]!.structuredContent, { address: noEth, ethBalanceWei: '0', delegated: false }, 'account: the no-ETH account as printed')
  t.equal(answers[2]!.isError, undefined, 'the gasless transfer is prepared')
  // Step 3's next step, as printed (issue 29, point 1): its quoteCall, quoted with payment "authorization".
  t.match(banner, /pass its quoteCall to the tool "quote" with payment "authorization"/)
  const quoteCall = answers[2]!.structuredContent!.quoteCall
  const quoted = await fetch(calls[2]![1]!, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'quote', arguments: { chain: 'local', call: quoteCall, token: 'USDC', payment: 'authorization' } } }),
  })
  const quote = ((await quoted.json()) as { result: { isError?: boolean; structuredContent?: { amountBaseUnits?: string }; content: { text: string }[] } }).result
  t.equal(quote.isError, undefined, `the quote answers: ${quote.content[0]!.text}`)
  t.ok(BigInt(quote.structuredContent!.amountBaseUnits!) > 0n, `a price in USDC base units (${quote.structuredContent!.amountBaseUnits})`)
})

t.test('GET /mcp (405) logs nothing at info', async (t) => {
  for (let i = 0; i < 5; i++) t.equal((await fetch(mcp)).status, 405)
  // Then a request that is logged at info (a body that is not JSON: 400). The log is written in
  // order, so once its line is out, any line for the probes before it would be out too.
  const mark = stderr.length
  const refused = await fetch(mcp, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{not json' })
  t.equal(refused.status, 400)
  await waitFor(async () => stderr.slice(mark), (log) => /"statusCode":400/.test(log), 'the access-log line of the 400', 15_000)
  t.notMatch(stderr, /"statusCode":405/, 'no access-log line for a 405 probe')
})
