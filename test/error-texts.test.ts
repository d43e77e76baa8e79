import t from 'tap'
import { createPublicClient, createWalletClient, encodeFunctionData, erc20Abi, getAddress, http, recoverAddress, type Address, type Hex, type PrivateKeyAccount } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { devnetChain } from '../core/devnet/chain.ts'
import { mintUsdc } from '../core/devnet/fund.ts'
import { startDevnetBruno } from './fixtures/devnetBruno.ts'
import { postRaw, RawMcpClient } from './fixtures/mcpHttp.ts'
import { signTransfer } from './fixtures/signedTransfer.ts'
import { signedBatches } from './fixtures/caliburSignatures.ts'
import { CALIBUR_ADDRESS } from '../plugins/calibur/networkOptions.ts'
import { bindings } from './adversarial/adversary.ts'

// Every refusal of SPEC §6's bruno section, and the texts that name a cause and the next step
// (issue 15, point 3), asserted as the real tools answer them on a devnet.

const bruno = await startDevnetBruno(t, { groups: ['bruno', 'calibur', '3009', 'erc20', 'uniswap'] })
const { deployment } = bruno
const chain = devnetChain(deployment.chainId)
const transport = http(deployment.rpcUrl)
const client = createPublicClient({ chain, transport, pollingInterval: 50 })
const mcp = new RawMcpClient(`${bruno.mcpUrl}/bruno,calibur,3009,erc20,uniswap`)
const payee = getAddress(bruno.config.networks[0]!.payee)
const usdc = deployment.usdc
const runnerContract = getAddress(deployment.runner.contract)
const usdcDomain = { address: usdc, name: 'USD Coin', version: '2', chainId: deployment.chainId }
const sponsor = createWalletClient({ account: privateKeyToAccount(deployment.deployer.privateKey), chain, transport })
const friend = privateKeyToAccount(generatePrivateKey()).address
const ADDRESS = /0x[0-9a-fA-F]{40}/.source

const refusal = async (name: string, args: Record<string, unknown>): Promise<string> => {
  const result = await mcp.callTool(name, { chain: 'local', ...args })
  if (!result.isError) throw new Error(`${name} was expected to refuse: ${JSON.stringify(result.structuredContent)}`)
  if (result.structuredContent !== undefined) throw new Error(`${name}: an isError result carries no structuredContent`)
  return result.content[0].text as string
}

const transferCall = (to: Hex, amount: bigint) => ({ to: usdc, data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to, amount] }) })

async function fundedPayer() {
  const key = generatePrivateKey()
  const account = privateKeyToAccount(key)
  await mintUsdc(deployment.rpcUrl, deployment, account.address, 50_000_000n)
  return { key, account }
}

async function signedPayment(key: Hex, value: bigint, to: Hex = payee) {
  const signed = await signTransfer(key, usdcDomain, to, value)
  return { token: usdc, authorization: signed.message, signature: signed.signature }
}

const authorize = async (signer: PrivateKeyAccount) => {
  const nonce = await client.getTransactionCount({ address: signer.address })
  const signed = await signer.signAuthorization({ contractAddress: CALIBUR_ADDRESS, chainId: deployment.chainId, nonce })
  return [{ chainId: signed.chainId, address: signed.address, nonce: signed.nonce, r: signed.r, s: signed.s, yParity: signed.yParity! }]
}

async function delegate(account: PrivateKeyAccount, to: Address = CALIBUR_ADDRESS): Promise<void> {
  const authorization = await sponsor.signAuthorization({ account, contractAddress: to })
  const hash = await sponsor.sendTransaction({ to: sponsor.account.address, authorizationList: [authorization] })
  await client.waitForTransactionReceipt({ hash })
}

t.test('invalid arguments: a union names the branch the input came closest to and its first wrong field', async (t) => {
  const { key } = await fundedPayer()
  const payment = await signedPayment(key, 1_000_000n)
  const { signature: _dropped, ...unsigned } = payment
  const call = transferCall(friend, 1n)

  const missing = await refusal('submit', { call, payment: unsigned })
  t.equal(missing, 'Invalid arguments for submit: /payment: looks like a signed transfer ({token, authorization, signature}) but `signature` is missing')

  const badAmount = await refusal('submit', { call, payment: { token: usdc, amountBaseUnits: '1.5', batch: '0x' } })
  t.equal(badAmount, "Invalid arguments for submit: /payment: looks like a batch payment ({token, amountBaseUnits, batch}) but `amountBaseUnits`: Expected string to match '^[0-9]{1,78}$'")

  const badNested = await refusal('submit', { call, payment: { ...payment, authorization: { ...payment.authorization, value: 'all' } } })
  t.equal(badNested, "Invalid arguments for submit: /payment: looks like a signed transfer ({token, authorization, signature}) but `authorization.value`: Expected string to match '^[0-9]{1,78}$'")

  const neither = await refusal('submit', { call, payment: { foo: 1 } })
  t.equal(neither, 'Invalid arguments for submit: /payment: expected a batch payment ({token, amountBaseUnits, batch}) or a signed transfer ({token, authorization, signature})')

  const literal = await refusal('quote', { call, token: 'USDC', payment: 'signed' })
  t.equal(literal, 'Invalid arguments for quote: /payment: Expected one of "authorization", "batch"')

  // The same words on REST (400 invalid_request, body.<path>) and JSON-RPC (-32602, params.<path>).
  const rest = await postRaw(`${bruno.server.url}/local/v1/submit`, { call, payment: unsigned })
  t.equal(rest.status, 400)
  t.same(rest.json.error, { code: 'invalid_request', message: 'body.payment: looks like a signed transfer ({token, authorization, signature}) but `signature` is missing' })
  const rpc = await postRaw(`${bruno.server.url}/rpc`, { jsonrpc: '2.0', id: 1, method: 'bruno_sendTransaction', params: { chain: 'local', call, payment: unsigned } })
  t.equal(rpc.json.error.code, -32602)
  t.equal(rpc.json.error.message, 'params.payment: looks like a signed transfer ({token, authorization, signature}) but `signature` is missing')
})

t.test('quote refusals', async (t) => {
  t.match(await refusal('quote', { call: transferCall(friend, 1n), token: friend }), new RegExp(`^${ADDRESS} is not accepted as payment on local: pay in one of `))
  const text = await refusal('quote', { call: transferCall(friend, 1n), token: 'USDC' })
  t.match(text, `cannot quote: the call fails in simulation from Bruno's Runner contract (${runnerContract}): the call reverted: ERC20: transfer amount exceeds balance. `)
  // The fix named, as submit names it (issue 29, point 1): the tools that make a call the account's own.
  t.match(text, /a transfer of the account's own tokens is transfer_authorization's call .*goes in a Calibur batch \(calibur_batch\)$/)
})

t.test('submit refusals of the authorization form', async (t) => {
  const { key } = await fundedPayer()
  const call = transferCall(friend, 1n)

  // The call itself reverts because the Runner, not the payer, is its msg.sender.
  const sender = await refusal('submit', { call, payment: await signedPayment(key, 1_000_000n) })
  t.match(sender, /^refused: the call fails in simulation even with \d+ gas: the call reverted: ERC20: transfer amount exceeds balance\. /)
  t.match(sender, `The call runs with Bruno's Runner contract (${runnerContract}) as msg.sender, so only calls that act by signature belong there: a transfer of the account's own tokens is transfer_authorization's call (the account signs it, no ETH); anything else the account does itself (an approve, a swap of its tokens) goes in a Calibur batch (calibur_batch). Nothing was sent. A call that fails on chain still pays, so Bruno only sends calls that succeed in simulation`)

  const noCall = { to: '0x0000000000000000000000000000000000000000', data: '0x' }
  t.match(await refusal('submit', { call: noCall, payment: await signedPayment(key, 1n) }), /^refused: the payment of 0\.000001 USDC is below the most the runner could pay for it now, [0-9.]+ USDC \(\d+ gas at up to \d+ wei\): quote again and pay the quoted amount$/)
  t.match(await refusal('submit', { call: noCall, payment: await signedPayment(key, 1_000_000n, friend) }), /not the payee/)

  const now = Math.floor(Date.now() / 1000)
  const ttl = bruno.config.networks[0]!.relay.submissionTtlSec
  t.match(
    await refusal('submit', { call: noCall, payment: await signedPayment(key, 1_000_000n), deadline: now + ttl + 600 }),
    new RegExp(`^the deadline \\d+ is more than ${ttl} s away \\(now \\d+\\), longer than this relay holds a submission: give one within ${ttl} s, or none$`),
  )
  const soon = await signTransfer(key, usdcDomain, payee, 1_000_000n)
  const expiring = { token: usdc, authorization: { ...soon.message, validBefore: String(now + 5) }, signature: soon.signature }
  t.match(await refusal('submit', { call: noCall, payment: expiring }), /too soon to send it safely: it must be valid at least \d+ s more; sign a new one$/)

  // A payment signed by another key (issue 29, point 2): the payment's signature is named, not "the call".
  const stranger = generatePrivateKey()
  const forged = await signedPayment(stranger, 1_000_000n)
  const wrongKey = await refusal('submit', { call: noCall, payment: { ...forged, authorization: { ...forged.authorization, from: privateKeyToAccount(key).address } } })
  t.match(wrongKey, /^refused: the token refused the payment: \S+: invalid signature\. payment\.signature is not payment\.authorization\.from's signature of payment\.authorization /)
  t.notMatch(wrongKey, /the call reverted/, 'not said to be the call')

  // A payer with code off the Runner's list (delegated by 7702 to WETH9, no wallet): PayerHasCode, naming the way it can pay.
  const delegated = await fundedPayer()
  await delegate(delegated.account, getAddress(deployment.weth))
  t.match(
    await refusal('submit', { call: noCall, payment: await signedPayment(delegated.key, 1_000_000n) }),
    /has code \(a contract, or an account delegated by EIP-7702\).*a delegated account pays with a Calibur batch \(calibur_batch\)/,
  )

  // {token, amountBaseUnits} with a call that is no delegate batch: a payment hidden inside is not accepted.
  t.match(await refusal('submit', { call, payment: { token: usdc, amountBaseUnits: '1000000', batch: call.data } }), /^refused: a call that pays somewhere inside is not accepted, since it cannot be made safe\. Pay one of two ways: /)
})

t.test('an undelegated account: each tool names the fix', async (t) => {
  const { account } = await fundedPayer()
  const transfer = await mcp.call('erc20_transfer', { chain: 'local', token: 'USDC', to: friend, amount: '1' })
  const fix = /it is not delegated to Calibur \(0x[0-9a-fA-F]{40}\)\. Delegate it first: have its wallet sign an EIP-7702 authorization to Calibur .* pass it as authorizationList to calibur_batch, calibur_execute and submit/

  t.match(await refusal('calibur_batch', { account: account.address, calls: transfer.calls, token: 'USDC' }), new RegExp(`^${account.address} has no code: ${fix.source}`))

  // Prepared and signed with its authorization, then sent on without it.
  const authorizationList = await authorize(account)
  const batch = await mcp.call('calibur_batch', { chain: 'local', account: account.address, calls: transfer.calls, token: 'USDC', authorizationList })
  const signed = await signedBatches(account, batch)
  const execute = await refusal('calibur_execute', signed)
  t.match(execute, new RegExp(`^${account.address} has no code: ${fix.source}`), 'not "getSeq returned no data"')

  const executed = await mcp.call('calibur_execute', { chain: 'local', ...signed, authorizationList })
  const notDelegated = new RegExp(
    `the account ${account.address} is not delegated to ${ADDRESS}: the batch can only run there \\(delegate it first, or pass its signed 7702 authorization in authorizationList\\)`,
  )
  t.match(await refusal('quote', { call: executed.call, paymentBatch: executed.payment.batch, token: 'USDC', payment: 'batch' }), new RegExp(`^cannot quote: ${notDelegated.source}`))
  t.match(await refusal('quote', { call: executed.call, token: 'USDC', payment: 'batch' }), /^the payment has no `batch`: a Calibur call is paid by a signed payment-only batch/, 'a batch quote without its payment batch')
  t.match(await refusal('submit', { call: executed.call, payment: executed.payment }), new RegExp(`^refused: ${notDelegated.source}`), 'not "payment short: 0"')
})

t.test('a swap without its approval: STF names the missing allowance and calibur_batch\'s approvals', async (t) => {
  const { account } = await fundedPayer()
  await delegate(account)
  const swap = await mcp.call('uniswap_swap_to_eth', { chain: 'local', token: 'USDC', amount: '1', recipient: account.address })
  const text = await refusal('calibur_batch', { account: account.address, calls: swap.calls, token: 'USDC' })
  t.match(text, /^the batch would fail: the call reverted: STF \(Uniswap's TransferHelper: safeTransferFrom failed\. /)
  t.match(text, /allowance to the router is missing or short .*calibur_batch's `approvals`/)
  // With the approvals the helper returned, it is prepared.
  const batch = await mcp.call('calibur_batch', { chain: 'local', account: account.address, calls: swap.calls, approvals: swap.approvals, token: 'USDC' })
  t.equal(batch.approvalsAdded.length, 1)
})

t.test('the bruno group\'s instructions say how to send viem\'s signAuthorization output, which cannot go into JSON as it is (issue 29, point 4)', async (t) => {
  const instructions = (await mcp.request('server/discover')).json.result.instructions as string
  t.match(instructions, /its bigint `v` sent as a number or string or left out: JSON has no bigint, and yParity suffices/)
  t.notMatch(instructions, /output as it is/)
})

// Issue 49, points 3 and 5: an agent learns Calibur's address for flow 4 from the instructions, not
// from a refusal; a batch payment is described with the `batch` submit requires.
t.test('the instructions name the delegate\'s address and a batch payment\'s three fields', async (t) => {
  const instructions = (await mcp.request('server/discover')).json.result.instructions as string
  t.match(instructions, `Calibur's address, an authorization's \`address\`: local ${CALIBUR_ADDRESS}`)
  t.match(instructions, '{token, amountBaseUnits, batch}')
  t.notMatch(instructions, /\{token, amountBaseUnits\} \(/, 'not the two fields alone')
})

t.test('WETH (issue 29, point 3): a signed-transfer quote is refused naming what can pay; a batch paying WETH the account lacks names the shortfall', async (t) => {
  const quoted = await refusal('quote', { call: transferCall(friend, 1n), token: 'WETH' })
  t.equal(
    quoted,
    `WETH cannot pay by signed transfer on local: ${getAddress(deployment.weth)} has no EIP-3009 transferWithAuthorization. ` +
      'Pay it with payment "batch" (a delegated account\'s payment batch transfers WETH: calibur_batch), or by signed transfer in USDC (payment_authorization)',
  )
  const { account } = await fundedPayer()
  await delegate(account)
  const transfer = await mcp.call('erc20_transfer', { chain: 'local', token: 'USDC', to: friend, amount: '1' })
  const prepared = await mcp.callTool('calibur_batch', { chain: 'local', account: account.address, calls: transfer.calls, token: 'WETH' })
  t.equal(prepared.isError, true, 'the account holds no WETH')
  // Not the provisional leg's one wei (issue 49, point 5): the account holds none.
  t.equal(prepared.content[0].text, `the batch would fail: the payer ${account.address} holds no WETH, which its payment transfers: fund it with WETH, or pay in another token`)
  t.notMatch(prepared.content[0].text, /without a reason/)
})

t.test('a payment batch that is not payment-only, and an unknown id', async (t) => {
  const { account } = await fundedPayer()
  await delegate(account)
  const transfer = await mcp.call('erc20_transfer', { chain: 'local', token: 'USDC', to: friend, amount: '1' })
  const batch = await mcp.call('calibur_batch', { chain: 'local', account: account.address, calls: transfer.calls, token: 'USDC' })
  const paymentTypedData = structuredClone(batch.paymentTypedData)
  paymentTypedData.message.batchedCall.calls[0].to = friend
  const signed = await signedBatches(account, { ...batch, paymentTypedData })
  t.match(await refusal('calibur_execute', signed), new RegExp(`^the payment batch is not payment-only: its call goes to ${friend}, not an accepted payment token`))

  const result = await mcp.callTool('status', { id: 'no-such-id' })
  t.equal(result.content[0].text, 'unknown submission id "no-such-id"')
})

// Issue 50, points 1–6: inputs the schemas let through reached a library's exception, answered as
// the server's fault (HTTP 500, JSON-RPC and MCP -32603) or the chain's (503). Each is the caller's
// to fix: read where the input is read, each gets its binding's client answer naming the field.
t.test('bad input on every binding: a signature no key made, a number over uint256, an empty or unsafe authorization list', async (t) => {
  const api = bindings(bruno, mcp)
  const { key } = await fundedPayer()
  const noCall = { to: '0x0000000000000000000000000000000000000000', data: '0x' }
  const good = await signedPayment(key, 1_000_000n)
  const body = good.signature.slice(2, 130)
  const cases: [string, Record<string, unknown>, RegExp][] = [
    ['v 0x05', { ...good, signature: `0x${body}05` }, /^payment\.signature is not a valid ECDSA signature: its last byte \(v\) is 0x05; v must be 27\/28 \(0x1b\/0x1c\) or 0\/1$/],
    ['r = 0', { ...good, signature: `0x${'00'.repeat(32)}${body.slice(64)}1b` }, /^payment\.signature is not a valid ECDSA signature: r is 0; it must be between 1 and the order of secp256k1$/],
    ['s ≥ n', { ...good, signature: `0x${body.slice(0, 64)}${'ff'.repeat(32)}1b` }, /^payment\.signature is not a valid ECDSA signature: s is not below the curve's order/],
    ['value 2²⁵⁶', { ...good, authorization: { ...good.authorization, value: (2n ** 256n).toString() } }, /^payment\.authorization\.value is 115792089237316195423570985008687907853269984665640564039457584007913129639936, above 2²⁵⁶ − 1, the most a uint256 holds$/],
  ]
  for (const [what, payment, words] of cases) {
    for (const binding of ['mcp', 'rest', 'rpc'] as const) {
      const submitted = await api.submit(binding, { call: noCall, payment })
      t.equal(submitted.accepted, false, `${what} over ${binding}: refused as the caller's (422, 1001, isError), not the server's`)
      if (!submitted.accepted) t.match(submitted.message, words, `${what} over ${binding}: names the field`)
    }
    // x402 checks the signature as the payment's own first (402 with its code): never a 500.
    t.equal((await api.submit('x402', { call: noCall, payment })).accepted, false, `${what} over x402: 402, not 500`)
  }

  // The schema says these, so the published JSON Schema tells a client before it sends.
  const list = (item: Record<string, unknown>) => [{ chainId: deployment.chainId, address: CALIBUR_ADDRESS, nonce: 0, r: `0x${'11'.repeat(32)}`, s: `0x${'22'.repeat(32)}`, yParity: 0, ...item }]
  for (const [what, authorizationList, field] of [
    ['an empty list', [], /authorizationList/],
    ['nonce 2⁶⁴', list({ nonce: 18446744073709551616 }), /authorizationList\/0|authorizationList\[0\]|nonce/],
    ['chainId 1e308', list({ chainId: 1e308 }), /authorizationList\/0|authorizationList\[0\]|chainId/],
  ] as const) {
    const quoted = await postRaw(`${bruno.server.url}/local/v1/quote`, { call: noCall, token: 'USDC', authorizationList })
    t.equal(quoted.status, 400, `${what}: REST quote 400`)
    t.match(quoted.json.error.message, field, `${what}: names the field`)
    const rpc = await postRaw(`${bruno.server.url}/rpc`, { jsonrpc: '2.0', id: 1, method: 'bruno_quote', params: { chain: 'local', call: noCall, token: 'USDC', authorizationList } })
    t.equal(rpc.json.error?.code, -32602, `${what}: /rpc invalid params`)
    const overMcp = await mcp.request('tools/call', { name: 'quote', arguments: { chain: 'local', call: noCall, token: 'USDC', authorizationList } }, 'quote')
    t.not(overMcp.json.error?.code, -32603, `${what}: MCP not an internal error`)
  }
  const published = (await mcp.listTools()).find((tool: { name: string }) => tool.name === 'submit')!.inputSchema.properties.authorizationList
  t.equal(published.minItems, 1, 'submit\'s published schema: at least one authorization')
})

// Issue 50, point 6: an r in range that is no point of the curve made transfer_authorization_call throw "Point is not on curve" (-32603).
t.test('transfer_authorization_call: a signature whose r is no point of the curve is the caller\'s, in words', async (t) => {
  const { account } = await fundedPayer()
  const prepared = (await mcp.callTool('transfer_authorization', { chain: 'local', from: account.address, to: friend, token: 'USDC', amount: '1' })).structuredContent
  const signature = await account.signTypedData(prepared.typedData)
  // The smallest x with no point on y² = x³ + 7 (mod p): tried in turn, as recovery would.
  let offCurve: Hex | undefined
  for (let x = 1n; offCurve === undefined && x < 100n; x++) {
    const candidate = `0x${x.toString(16).padStart(64, '0')}${signature.slice(66, 130)}1b` as Hex
    const recovered = await recoverAddress({ hash: `0x${'ab'.repeat(32)}`, signature: candidate }).catch(() => undefined)
    if (recovered === undefined) offCurve = candidate
  }
  t.ok(offCurve, 'an x with no point found')
  const result = await mcp.callTool('transfer_authorization_call', { chain: 'local', typedData: prepared.typedData, signature: offCurve })
  t.equal(result.isError, true, 'a tool refusal, not -32603')
  t.match(result.content[0].text, /^signature is not a valid ECDSA signature: it recovers to no address/)
})
