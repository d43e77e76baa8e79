import t, { type Test } from 'tap'
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client'
import { createPublicClient, encodeFunctionData, erc20Abi, getAddress, http, parseSignature, type Address, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { mintUsdc } from '../core/devnet/fund.ts'
import { eip3009Abi } from '../plugins/3009/abi.ts'
import { randomAuthorizationNonce, transferWithAuthorizationTypedData } from '../plugins/3009/typedData.ts'
import { offlineConfig, OFFLINE_RPC_URL, startBruno } from './fixtures/bruno.ts'
import { startDevnetBruno } from './fixtures/devnetBruno.ts'
import { postRaw, RawMcpClient } from './fixtures/mcpHttp.ts'
import { waitFor } from './fixtures/waitFor.ts'

// Flow 2 (an account with only USDC: no ETH, no delegate) over every transport: REST, JSON-RPC,
// and MCP with the official SDK v2 client, plus the REST and JSON-RPC refusals.

const bruno = await startDevnetBruno(t, { groups: ['bruno', '3009'] })
const { deployment } = bruno
const base = bruno.server.url
const client = createPublicClient({ transport: http(deployment.rpcUrl) })
const mcp = new RawMcpClient(`${bruno.mcpUrl}/bruno,3009`)
const payee = getAddress(bruno.config.networks[0]!.payee)
const usdc = deployment.usdc
const runner = deployment.runner.operator.address
const token = { address: usdc, name: 'USD Coin', version: '2', chainId: deployment.chainId }

interface Reply {
  status: number
  headers: Headers
  json: any
}

async function rest(method: 'GET' | 'POST', path: string, body?: unknown): Promise<Reply> {
  const response = await fetch(`${base}${path}`, {
    method,
    ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: typeof body === 'string' ? body : JSON.stringify(body) }),
  })
  const text = await response.text()
  return { status: response.status, headers: response.headers, json: text ? JSON.parse(text) : undefined }
}

let rpcId = 0
async function rpc(method: string, params: Record<string, unknown>): Promise<Reply> {
  const reply = await postRaw(`${base}/rpc`, { jsonrpc: '2.0', id: ++rpcId, method, params })
  return { status: reply.status, headers: reply.headers, json: reply.json }
}

async function rpcResult(method: string, params: Record<string, unknown>): Promise<any> {
  const reply = await rpc(method, params)
  if (reply.status !== 200 || !('result' in reply.json)) throw new Error(`${method} failed: ${JSON.stringify(reply.json)}`)
  return reply.json.result
}

const balance = (address: Address) => client.readContract({ address: usdc, abi: erc20Abi, functionName: 'balanceOf', args: [address] })

/** A funded USDC-only account, and its call: a signed 10 USDC transfer to a friend (acts by signature). */
async function usdcOnlyAccount(funds: bigint) {
  const key = generatePrivateKey()
  const signer = privateKeyToAccount(key)
  const friend = privateKeyToAccount(generatePrivateKey()).address
  await mintUsdc(deployment.rpcUrl, deployment, signer.address, funds)
  const gift = await signTransfer(key, friend, 10_000_000n)
  const { v, r, s } = parseSignature(gift.signature)
  const call = {
    to: usdc,
    data: encodeFunctionData({
      abi: eip3009Abi,
      functionName: 'transferWithAuthorization',
      args: [signer.address, friend, 10_000_000n, 0n, BigInt(gift.message.validBefore), gift.message.nonce, Number(v), r, s],
    }),
  }
  return { key, signer, address: signer.address, friend, call }
}

/** Typed data built with the encoder, as a client that does not use payment_authorization would. */
async function signTransfer(key: Hex, to: Address, value: bigint) {
  const signer = privateKeyToAccount(key)
  const now = BigInt(Math.floor(Date.now() / 1000))
  const typedData = transferWithAuthorizationTypedData({ token, from: signer.address, to, value, validAfter: 0n, validBefore: now + 600n, nonce: randomAuthorizationNonce() })
  return { message: typedData.message, signature: await signer.signTypedData(typedData as never) }
}

async function until<T extends { stage: string }>(read: () => Promise<T>): Promise<T> {
  return waitFor(read, (status) => status.stage === 'done' || status.stage === 'failed', 'the submission settled', 30_000)
}

/** What the chain says after a done submission: `amount` paid, the payee kept the charge and refunded the rest, the runner paid only gas, the account exactly the call and the charge. */
async function checkSettled(
  t: Test,
  done: any,
  before: { payee: bigint; runner: bigint; runnerNonce: number },
  account: { address: Address; friend: Address; funds: bigint },
  amount: bigint,
) {
  t.equal(done.stage, 'done', done.reason)
  const receipt = await client.getTransactionReceipt({ hash: done.transaction.hash })
  t.equal(receipt.status, 'success')
  t.equal(getAddress(receipt.from), runner, 'the runner sent it')
  t.equal(await balance(account.friend), 10_000_000n, 'the call ran: the friend got 10 USDC')
  const { paidBaseUnits, chargedBaseUnits, refundedBaseUnits } = done.outcome
  t.equal(paidBaseUnits, amount.toString(), 'the amount was paid')
  t.equal(BigInt(chargedBaseUnits) + BigInt(refundedBaseUnits), amount, 'the payee kept the charge and refunded the rest')
  t.equal((await balance(payee)) - before.payee, BigInt(chargedBaseUnits), 'the payee gained the charge')
  t.equal(await balance(account.address), account.funds - 10_000_000n - BigInt(chargedBaseUnits), 'the account paid exactly the call and the charge')
  t.equal(await client.getBalance({ address: account.address }), 0n, 'the account still has no ETH')
  t.equal(await client.getTransactionCount({ address: account.address }), 0, 'the account sent nothing itself')
  t.equal(await client.getCode({ address: account.address }), undefined, 'the account is still not delegated')
  const fee = receipt.gasUsed * receipt.effectiveGasPrice
  t.equal(before.runner - (await client.getBalance({ address: runner })), fee, 'the runner paid only the gas')
  t.equal(await client.getTransactionCount({ address: runner }), before.runnerNonce + 1, 'the runner sent one transaction')
  t.equal(done.transaction.feeWei, fee.toString())
}

const snapshot = async () => ({
  payee: await balance(payee),
  runner: await client.getBalance({ address: runner }),
  runnerNonce: await client.getTransactionCount({ address: runner }),
})

t.test('flow 2 over REST: quote, payment_authorization, sign, submit (202), status until done', async (t) => {
  const funds = 50_000_000n
  const account = await usdcOnlyAccount(funds)

  const seen = await rest('GET', `/local/v1/account/${account.address.toLowerCase()}`)
  t.equal(seen.status, 200)
  t.equal(seen.json.address, account.address, 'checksummed')
  t.equal(seen.json.delegated, false)
  t.equal(seen.json.ethBalanceWei, '0')
  t.equal(seen.json.nonce, 0)
  t.equal(seen.json.tokens.find((entry: any) => entry.symbol === 'USDC').balanceBaseUnits, funds.toString())

  const quoted = await rest('POST', '/local/v1/quote', { call: account.call, token: 'USDC', payment: 'authorization' })
  t.equal(quoted.status, 200)
  const quote = quoted.json
  t.equal(quote.payee, payee)
  t.ok(BigInt(quote.amountBaseUnits) > 0n)

  const prepared = await mcp.call('payment_authorization', { chain: 'local', from: account.address, token: 'USDC', amount: quote.amount })
  const { typedData } = prepared
  t.same(typedData.domain, { name: 'USD Coin', version: '2', chainId: deployment.chainId, verifyingContract: usdc }, 'the token\'s own domain')
  t.equal(typedData.primaryType, 'TransferWithAuthorization')
  t.equal(typedData.message.from, account.address)
  t.equal(typedData.message.to, payee, 'pays the payee')
  t.equal(typedData.message.value, quote.amountBaseUnits)
  t.equal(typedData.message.validAfter, '0')
  const ttl = bruno.config.networks[0]!.relay.quoteTtlSec
  const validBefore = Number(typedData.message.validBefore) - Math.floor(Date.now() / 1000)
  t.ok(validBefore > ttl - 5 && validBefore <= ttl, 'valid for the quote ttl by default')
  t.same(prepared.payment, { token: usdc, authorization: typedData.message })
  t.match(prepared.next, /sign typedData unchanged/i)

  const signature = await account.signer.signTypedData(typedData)
  const before = await snapshot()
  const accepted = await rest('POST', '/local/v1/submit', { call: account.call, payment: { ...prepared.payment, signature } })
  t.equal(accepted.status, 202)
  t.equal(accepted.json.stage, 'waiting')
  t.equal(accepted.json.chain, 'local')
  t.equal(accepted.headers.get('location'), `/v1/status/${accepted.json.id}`)

  const done = await until(async () => (await rest('GET', `/local/v1/status/${accepted.json.id}`)).json)
  await checkSettled(t, done, before, { ...account, funds }, BigInt(quote.amountBaseUnits))
  const global = await rest('GET', `/v1/status/${accepted.json.id}`)
  t.equal(global.status, 200)
  t.same(global.json, done, 'the chain-free status path answers the same')

  const after = await rest('GET', `/local/v1/account/${account.address}`)
  t.equal(after.json.tokens.find((entry: any) => entry.symbol === 'USDC').balanceBaseUnits, (funds - 10_000_000n - BigInt(done.outcome.chargedBaseUnits)).toString())
})

t.test('flow 2 over JSON-RPC: bruno_quote, encoder typed data, bruno_sendTransaction, bruno_getStatus', async (t) => {
  const funds = 30_000_000n
  const account = await usdcOnlyAccount(funds)
  const seen = await rpcResult('bruno_getAccount', { chain: 'local', address: account.address })
  t.equal(seen.delegated, false)
  t.equal(seen.ethBalanceWei, '0')

  const quote = await rpcResult('bruno_quote', { chain: 'local', call: account.call, token: 'USDC', payment: 'authorization' })
  t.equal(quote.payee, payee)
  const fee = await signTransfer(account.key, payee, BigInt(quote.amountBaseUnits))
  const before = await snapshot()
  const accepted = await rpcResult('bruno_sendTransaction', {
    chain: 'local',
    call: account.call,
    payment: { token: usdc, authorization: fee.message, signature: fee.signature },
  })
  t.equal(accepted.stage, 'waiting')
  const done = await until(() => rpcResult('bruno_getStatus', { id: accepted.id }))
  await checkSettled(t, done, before, { ...account, funds }, BigInt(quote.amountBaseUnits))
})

t.test('a signed transfer on a spent nonce with another call: refused naming the first; the first again answers the first (issue 43, point 10)', async (t) => {
  const account = await usdcOnlyAccount(40_000_000n)
  const quote = (await rest('POST', '/local/v1/quote', { call: account.call, token: 'USDC', payment: 'authorization' })).json
  const fee = await signTransfer(account.key, payee, BigInt(quote.amountBaseUnits))
  const payment = { token: usdc, authorization: fee.message, signature: fee.signature }
  const accepted = await rest('POST', '/local/v1/submit', { call: account.call, payment })
  t.equal(accepted.status, 202)
  // Another call — its own signed transfer to another friend — with the same signed payment.
  const other = await usdcOnlyAccount(20_000_000n)
  const refusedWhileActive = await rest('POST', '/local/v1/submit', { call: other.call, payment })
  t.equal(refusedWhileActive.status, 422)
  const spentBy = (spent: string) =>
    new RegExp(`^refused: the payment's nonce \\(3009:local:${usdc}:${account.address}:${fee.message.nonce}\\) ${spent} by the submission ${accepted.json.id} with another call: a signed transfer pays once, for the call first submitted with it\\. Nothing was taken; sign a new payment \\(payment_authorization\\) for this call, or ask status with that id$`)
  t.match(refusedWhileActive.json.error.message, spentBy('is already being spent \\((waiting|sending|confirming)\\)'))
  const done = await until(async () => (await rest('GET', `/local/v1/status/${accepted.json.id}`)).json)
  t.equal(done.stage, 'done', done.reason)
  const refusedOnceDone = await rest('POST', '/local/v1/submit', { call: other.call, payment })
  t.equal(refusedOnceDone.status, 422)
  t.match(refusedOnceDone.json.error.message, spentBy('was already spent'))
  const again = await rest('POST', '/local/v1/submit', { call: account.call, payment })
  t.same({ id: again.json.id, stage: again.json.stage }, { id: accepted.json.id, stage: 'done' }, 'the same call and payment again: the first answers, done')
  t.equal(await balance(other.friend), 0n, 'the other call never ran')
})

t.test('REST and JSON-RPC refusals', async (t) => {
  const account = await usdcOnlyAccount(20_000_000n)
  const runnerNonce = await client.getTransactionCount({ address: runner })

  t.test('unknown chain', async (t) => {
    let reply = await rest('GET', `/nowhere/v1/account/${account.address}`)
    t.equal(reply.status, 404)
    t.equal(reply.json.error.code, 'unknown_chain')
    t.match(reply.json.error.message, /unknown chain "nowhere"/)
    reply = await rest('POST', '/nowhere/v1/quote', { call: account.call, token: 'USDC' })
    t.equal(reply.status, 404)
    t.equal(reply.json.error.code, 'unknown_chain')
    reply = await rest('GET', '/nowhere/v1/status/some-id')
    t.equal(reply.status, 404)
    t.equal(reply.json.error.code, 'unknown_chain')
    reply = await rpc('bruno_quote', { chain: 'nowhere', call: account.call, token: 'USDC' })
    t.equal(reply.status, 200)
    t.equal(reply.json.error.code, -32602)
    t.match(reply.json.error.message, /unknown chain/)
    t.equal(reply.json.id, rpcId)
  })

  t.test('invalid body: 400 invalid_request naming the field; JSON-RPC -32602', async (t) => {
    let reply = await rest('POST', '/local/v1/quote', { call: { to: '0x12', data: '0x' }, token: 'USDC' })
    t.equal(reply.status, 400)
    t.equal(reply.json.error.code, 'invalid_request')
    t.match(reply.json.error.message, /^body\.call\.to: /)
    reply = await rest('POST', '/local/v1/submit', { call: account.call, payment: { token: usdc, amountBaseUnits: '1.5', batch: '0xc3c16ee4' } })
    t.equal(reply.status, 400)
    t.match(reply.json.error.message, /^body\.payment: looks like a batch payment \(\{token, amountBaseUnits, batch\}\) but `amountBaseUnits`: /, 'the payment form that came closest names its field')
    reply = await rest('POST', '/local/v1/submit', { call: account.call, payment: { token: usdc, amountBaseUnits: '1' } })
    t.equal(reply.status, 400)
    t.equal(reply.json.error.message, 'body.payment: looks like a batch payment ({token, amountBaseUnits, batch}) but `batch` is missing', 'a batch payment without its batch names it')
    reply = await rest('POST', '/local/v1/submit', { call: account.call })
    t.equal(reply.status, 400)
    t.match(reply.json.error.message, /^body\.payment: Expected required property/)
    reply = await rest('POST', '/local/v1/quote', { call: account.call, token: 'USDC', extra: 1 })
    t.match(reply.json.error.message, /^body\.extra: Unexpected property/)
    reply = await rest('GET', '/local/v1/account/0x1234')
    t.equal(reply.status, 400)
    t.match(reply.json.error.message, /^path\.address: /)
    reply = await rest('POST', '/local/v1/quote', '{not json')
    t.equal(reply.status, 400)
    t.equal(reply.json.error.code, 'parse_error')
    reply = await rest('POST', '/local/v1/quote')
    t.equal(reply.status, 400)
    t.equal(reply.json.error.code, 'invalid_request')

    reply = await rpc('bruno_sendTransaction', { chain: 'local', call: { to: usdc, data: 'zz' }, payment: { token: usdc, amountBaseUnits: '1' } })
    t.equal(reply.status, 200)
    t.equal(reply.json.error.code, -32602)
    t.match(reply.json.error.message, /^params\.call\.data: /)
    t.same(reply.json.error.data, { code: 'invalid_request' })
    reply = await rpc('bruno_quote', { call: account.call, token: 'USDC' })
    t.equal(reply.json.error.code, -32602)
    t.match(reply.json.error.message, /params\.chain/)
  })

  t.test('short payment: 422 refused, JSON-RPC 1001; the runner sends nothing', async (t) => {
    const short = await signTransfer(account.key, payee, 1n)
    const payment = { token: usdc, authorization: short.message, signature: short.signature }
    const reply = await rest('POST', '/local/v1/submit', { call: account.call, payment })
    t.equal(reply.status, 422)
    t.equal(reply.json.error.code, 'refused')
    t.match(reply.json.error.message, /is below the most the runner could pay for it now/)
    const viaRpc = await rpc('bruno_sendTransaction', { chain: 'local', call: account.call, payment })
    t.equal(viaRpc.json.error.code, 1001)
    t.match(viaRpc.json.error.message, /is below the most the runner could pay for it now/)
    t.same(viaRpc.json.error.data, { code: 'refused' })
    const reverting = await rest('POST', '/local/v1/quote', {
      call: { to: usdc, data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [payee, 1n] }) },
      token: 'USDC',
    })
    t.equal(reverting.status, 422)
    t.match(reverting.json.error.message, /the call fails in simulation from Bruno's Runner contract.*only calls that act by signature belong there/)
  })

  t.test('unknown id: 404 not_found, JSON-RPC 1002', async (t) => {
    let reply = await rest('GET', '/v1/status/no-such-id')
    t.equal(reply.status, 404)
    t.same(reply.json, { error: { code: 'not_found', message: 'unknown submission id "no-such-id"' } })
    reply = await rest('GET', '/local/v1/status/no-such-id')
    t.equal(reply.status, 404)
    t.equal(reply.json.error.code, 'not_found')
    reply = await rpc('bruno_getStatus', { id: 'no-such-id' })
    t.equal(reply.json.error.code, 1002)
    t.match(reply.json.error.message, /unknown submission id/)
  })

  t.test('JSON-RPC envelope: unknown method, bad request, parse error, notification, batch', async (t) => {
    let reply = await rpc('eth_sendTransaction', {})
    t.equal(reply.json.error.code, -32601)
    reply = { ...(await postRaw(`${base}/rpc`, { id: 7, method: 'bruno_getStatus' })) }
    t.same(reply.json, { jsonrpc: '2.0', id: 7, error: { code: -32600, message: reply.json.error.message } })
    reply = await postRaw(`${base}/rpc`, '{"jsonrpc":')
    t.equal(reply.status, 400)
    t.equal(reply.json.error.code, -32700)
    t.equal(reply.json.id, null)
    const notified = await postRaw(`${base}/rpc`, { jsonrpc: '2.0', method: 'bruno_getStatus', params: { id: 'x' } })
    t.equal(notified.status, 202, 'a notification is run, not answered')
    t.equal(notified.text, '')
    reply = await postRaw(`${base}/rpc`, [
      { jsonrpc: '2.0', id: 'a', method: 'bruno_getAccount', params: { chain: 'local', address: account.address } },
      { jsonrpc: '2.0', id: 'b', method: 'bruno_getStatus', params: { id: 'no-such-id' } },
      { jsonrpc: '2.0', method: 'bruno_getStatus', params: { id: 'x' } },
    ])
    t.equal(reply.status, 200)
    t.equal(reply.json.length, 2)
    t.equal(reply.json[0].id, 'a')
    t.equal(reply.json[0].result.address, account.address)
    t.equal(reply.json[1].error.code, 1002)
    reply = await postRaw(`${base}/rpc`, [])
    t.equal(reply.json.error.code, -32600)
  })

  t.equal(await client.getTransactionCount({ address: runner }), runnerNonce, 'the runner sent nothing for any refusal')
})

t.test('flow 2 over MCP with the official SDK v2 client, as an agent would: /mcp/bruno,3009', async (t) => {
  const agent = new ModernClient({ name: 'bruno-tests-agent', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } })
  await agent.connect(new ModernTransport(new URL(`${bruno.mcpUrl}/bruno,3009`)))
  t.teardown(() => agent.close())
  const { tools } = await agent.listTools()
  t.same(tools.map((tool) => tool.name), ['account', 'quote', 'submit', 'status', 'payment_authorization', 'transfer_authorization', 'transfer_authorization_call'])
  const discovered = await agent.discover()
  t.match(discovered.instructions, /payment_authorization/)

  const call = async (name: string, args: Record<string, unknown>): Promise<any> => {
    const result = await agent.callTool({ name, arguments: args })
    if (result.isError) throw new Error(`${name} refused: ${(result.content as { text: string }[])[0]!.text}`)
    return result.structuredContent
  }

  const funds = 40_000_000n
  const account = await usdcOnlyAccount(funds)
  const seen = await call('account', { chain: 'local', address: account.address })
  t.equal(seen.delegated, false)
  const quote = await call('quote', { chain: 'local', call: account.call, token: 'USDC', payment: 'authorization' })
  const prepared = await call('payment_authorization', { chain: 'local', from: account.address, token: 'USDC', amount: quote.amount })
  // The wallet: another MCP server or a person; here a local key signs the typed data unchanged.
  const signature = await account.signer.signTypedData(prepared.typedData)
  const before = await snapshot()
  const accepted = await call('submit', { chain: 'local', call: account.call, payment: { ...prepared.payment, signature } })
  t.equal(accepted.stage, 'waiting')
  const done = await until(() => call('status', { id: accepted.id }))
  await checkSettled(t, done, before, { ...account, funds }, BigInt(quote.amountBaseUnits))

  const zero = await agent.callTool({ name: 'payment_authorization', arguments: { chain: 'local', from: account.address, token: 'USDC', amount: '0' } })
  t.equal(zero.isError, true)
  const tooLong = await agent.callTool({
    name: 'payment_authorization',
    arguments: { chain: 'local', from: account.address, token: 'USDC', amount: '1', validForSec: 7200 },
  })
  t.equal(tooLong.isError, true)
  t.match((tooLong.content as { text: string }[])[0]!.text, /validForSec/)
  // relay.paymentMarginSec 30 + relay.inclusionSec 30: submit would refuse it (test/adversarial/expiry-cancel.test.ts).
  // The published minimum follows them (issue 29, point 4): every value the schema admits can be submitted.
  const listed = (await agent.listTools()).tools.find((tool) => tool.name === 'payment_authorization')!
  const validFor = (listed.inputSchema.properties as Record<string, { minimum?: number; description?: string }>).validForSec!
  t.equal(validFor.minimum, 61, 'the schema\'s minimum: more than the 60 s submit needs')
  t.match(validFor.description, /over the 60 submit needs/)
  for (const validForSec of [10, 30, 60]) {
    const tooShort = await agent.callTool({ name: 'payment_authorization', arguments: { chain: 'local', from: account.address, token: 'USDC', amount: '1', validForSec } })
    t.equal(tooShort.isError, true, `validForSec ${validForSec}: refused`)
    t.match((tooShort.content as { text: string }[])[0]!.text, /validForSec.*61/, 'naming the field and the least it takes')
  }
  const longEnough = await agent.callTool({ name: 'payment_authorization', arguments: { chain: 'local', from: account.address, token: 'USDC', amount: '1', validForSec: 61 } })
  t.notOk(longEnough.isError, 'validForSec 61: typed data')
  const notToken = await agent.callTool({ name: 'payment_authorization', arguments: { chain: 'local', from: account.address, token: 'DOGE', amount: '1' } })
  t.match((notToken.content as { text: string }[])[0]!.text, /unknown token "DOGE"/)
})

t.test('an unreachable chain: 503 naming the chain, never its URL; JSON-RPC and MCP -32603; each with a correlation id', async (t) => {
  const env = { ...process.env }
  const offline = await startBruno(t, offlineConfig(env, { groups: ['bruno', '3009'] }), env, [OFFLINE_RPC_URL])
  const address = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'
  const reply = await fetch(`${offline.server.url}/local/v1/account/${address}`)
  const text = await reply.text()
  t.equal(reply.status, 503)
  t.equal(JSON.parse(text).error.code, 'chain_unavailable')
  t.match(JSON.parse(text).error.message, /chain "local" is unavailable/)
  t.match(JSON.parse(text).error.correlationId, /^[0-9a-f]{16}$/)
  t.notMatch(text, /offline-rpc-secret-key|127\.0\.0\.1:9/, 'the RPC URL is never quoted')
  const viaRpc = await postRaw(`${offline.server.url}/rpc`, { jsonrpc: '2.0', id: 1, method: 'bruno_getAccount', params: { chain: 'local', address } })
  t.equal(viaRpc.json.error.code, -32603)
  t.equal(viaRpc.json.error.data.code, 'chain_unavailable')
  t.match(viaRpc.json.error.data.correlationId, /^[0-9a-f]{16}$/)
  t.notMatch(viaRpc.text, /offline-rpc-secret-key/)
  // Not the caller's doing: a JSON-RPC internal error, not a tool result with isError.
  const prepared = await new RawMcpClient(`${offline.mcpUrl}/3009`).request(
    'tools/call',
    { name: 'payment_authorization', arguments: { chain: 'local', from: address, token: 'USDC', amount: '1' } },
    'payment_authorization',
  )
  t.equal(prepared.json.error.code, -32603)
  t.match(prepared.json.error.message, /chain "local" is unavailable/)
  t.match(prepared.json.error.data.correlationId, /^[0-9a-f]{16}$/)
})

t.test('without the bruno group there is no REST or JSON-RPC relay', async (t) => {
  const env = { ...process.env }
  const encoders = await startBruno(t, offlineConfig(env), env)
  t.equal((await fetch(`${encoders.server.url}/local/v1/status/x`)).status, 404)
  t.equal((await postRaw(`${encoders.server.url}/rpc`, { jsonrpc: '2.0', id: 1, method: 'bruno_getStatus', params: { id: 'x' } })).status, 404)
})
