import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import t from 'tap'
import { createPublicClient, createWalletClient, erc20Abi, getAddress, http, type Hex, type WalletClient } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { base } from 'viem/chains'
import { startDevnetBruno } from './fixtures/devnetBruno.ts'
import { giftCall } from './fixtures/giftCall.ts'

// x402 version 1 (issue 30) with the legacy official client, unmodified: x402-fetch 1.2.0's wrapFetchWithPayment over a viem
// wallet client, against Bruno on the devnet as Base (`--as base`: chain id 8453, USDC at Base's address), which v1 names
// "base". The 402 carries v1's offers in its body beside v2's header; the retry's X-PAYMENT is answered in X-PAYMENT-RESPONSE.

// The legacy client has its own install (.ci/legacy-x402: ~670 MB of wallet kits kept out of Bruno's, and out of test/,
// where tools that read the tests would wade through its node_modules). Without it the
// test is skipped, saying how to install it; .ci/run installs it and requires it (BRUNO_TEST_X402_V1_REQUIRED).
const legacy = new URL('../.ci/legacy-x402/package.json', import.meta.url)
const installed = existsSync(new URL('../.ci/legacy-x402/node_modules/x402-fetch/package.json', import.meta.url))
if (!installed) {
  if (process.env.BRUNO_TEST_X402_V1_REQUIRED) t.fail('the legacy x402 v1 client is not installed: npm ci --prefix .ci/legacy-x402')
  else t.plan(0, 'the legacy x402 v1 client is not installed here: npm ci --prefix .ci/legacy-x402 to run this test')
  process.exit()
}
/** What the test takes from x402-fetch 1.2.0 (typed here: its types name the viem copy it installs for itself). */
type LegacyClient = {
  wrapFetchWithPayment: (fetch: typeof globalThis.fetch, wallet: WalletClient, maxValue?: bigint, selectRequirements?: (accepts: unknown[]) => unknown) => typeof globalThis.fetch
  decodeXPaymentResponse: (header: string) => { success: boolean; network: string; payer: string; transaction: string }
}
const { decodeXPaymentResponse, wrapFetchWithPayment } = (await import(createRequire(legacy).resolve('x402-fetch'))) as LegacyClient

const bruno = await startDevnetBruno(t, { groups: ['bruno'], as: 'base' })
const { deployment } = bruno
const client = createPublicClient({ transport: http(deployment.rpcUrl) })
const endpoint = `${bruno.server.url}/base/v1/x402`
const payee = getAddress(bruno.config.networks[0]!.payee)
const operator = deployment.runner.operator.address
const usdcOf = (address: Hex) => client.readContract({ address: deployment.usdc, abi: erc20Abi, functionName: 'balanceOf', args: [address] })
const wallet = (account: ReturnType<typeof privateKeyToAccount>) => createWalletClient({ chain: base, transport: http(deployment.rpcUrl), account }) as WalletClient
/** X-PAYMENT-RESPONSE as Bruno sends it: x402 1.2.0 types only its success. */
type V1Settlement = { success: boolean; errorReason?: string; errorMessage?: string; transaction: string; network: string; payer?: string }
const settlementOf = (response: Response) => decodeXPaymentResponse(response.headers.get('x-payment-response')!) as unknown as V1Settlement
// The client pays at most 0.1 USDC unless told more: a relayed call costs more than that at the devnet's gas price.
const MAX_USDC = 5_000_000n
const post = (body: unknown, headers: Record<string, string> = {}) =>
  fetch(endpoint, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })
const init = (call: unknown) => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ call }) })

t.test('the 402 offers v1 in its body (network "base", maxAmountRequired, the resource) beside v2\'s header', async (t) => {
  const { call } = await giftCall(deployment, 50_000_000n, 1_000_000n)
  const response = await post({ call })
  t.equal(response.status, 402)
  const body = await response.json()
  const [quote] = body.quotes
  t.equal(body.x402Version, 1)
  t.same(body.accepts, [
    {
      scheme: 'exact',
      network: 'base',
      maxAmountRequired: quote.amountBaseUnits,
      resource: endpoint,
      description: `the call to ${call.to} on base, run by Bruno`,
      mimeType: 'application/json',
      payTo: payee,
      maxTimeoutSeconds: 300,
      asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
      extra: { name: 'USD Coin', version: '2' },
    },
  ])
  const v2 = JSON.parse(Buffer.from(response.headers.get('payment-required')!, 'base64').toString('utf8'))
  t.equal(v2.accepts[0].network, 'eip155:8453', 'v2 numbers the same chain')
  t.equal(v2.accepts[0].amount, quote.amountBaseUnits, 'and asks the same amount')
  t.match(response.headers.get('access-control-expose-headers'), /X-PAYMENT-RESPONSE/)
})

t.test('a USDC-only account with no ETH pays a friend by one fetch of x402-fetch 1.x', async (t) => {
  const { account, friend, call } = await giftCall(deployment, 50_000_000n, 10_000_000n)
  t.equal(await client.getBalance({ address: account.address }), 0n, 'no ETH')
  const payeeBefore = await usdcOf(payee)
  const response = await wrapFetchWithPayment(fetch, wallet(account), MAX_USDC)(endpoint, init(call))
  const body = await response.json()
  t.equal(response.status, 200, JSON.stringify(body))
  const settled = decodeXPaymentResponse(response.headers.get('x-payment-response')!)
  t.equal(settled.success, true)
  t.equal(settled.network, 'base', 'the network as v1 names it')
  t.equal(getAddress(settled.payer), account.address)
  t.equal(body.transaction.hash, settled.transaction, 'the body is the submission, its hash the settlement\'s')
  t.equal(body.outcome.callSucceeded, true)
  t.equal(await usdcOf(friend), 10_000_000n, 'the friend has the gift')
  const paid = (await usdcOf(payee)) - payeeBefore
  t.equal(BigInt(body.outcome.chargedBaseUnits), paid, 'the payee kept what the outcome says it charged')
  t.equal(BigInt(body.outcome.chargedBaseUnits) + BigInt(body.outcome.refundedBaseUnits), BigInt(body.outcome.paidBaseUnits), 'and refunded the rest of the x402 payment in the same transaction')
  t.ok(BigInt(body.outcome.refundedBaseUnits) > 0n, `refunded ${body.outcome.refundedBaseUnits} of ${body.outcome.paidBaseUnits}`)
  t.equal(await usdcOf(account.address), 40_000_000n - paid, 'the account paid the gift and Bruno, nothing else')
  t.equal(response.headers.get('payment-response'), null, 'a v1 payment is answered in v1\'s header only')
})

t.test('each bad v1 payment gets x402\'s error code in X-PAYMENT-RESPONSE, and nothing is sent', async (t) => {
  const { account, call } = await giftCall(deployment, 50_000_000n, 1_000_000n)
  const nonceBefore = await client.getTransactionCount({ address: operator })
  type Requirement = { network: string; maxAmountRequired: string; payTo: string; maxTimeoutSeconds: number; asset: string; extra?: Record<string, unknown> }
  // The official client signs whatever offer its selector picks: each case changes the offer first.
  const paidWith = async (change: (offer: Requirement) => Requirement, signer = account) => {
    const pay = wrapFetchWithPayment(fetch, wallet(signer), MAX_USDC, (accepts) => change(structuredClone((accepts as Requirement[])[0]!)) as never)
    const response = await pay(endpoint, init(call))
    return { status: response.status, settled: settlementOf(response) }
  }
  const cases: [string, (offer: Requirement) => Requirement, string][] = [
    ['a value below the price', (offer) => ({ ...offer, maxAmountRequired: '1' }), 'invalid_exact_evm_payload_authorization_value_mismatch'],
    ['another network', (offer) => ({ ...offer, network: 'base-sepolia' }), 'invalid_network'],
    ['another payTo', (offer) => ({ ...offer, payTo: account.address }), 'invalid_exact_evm_payload_recipient_mismatch'],
    ['too short a validity', (offer) => ({ ...offer, maxTimeoutSeconds: 20 }), 'invalid_exact_evm_payload_authorization_valid_before'],
    ['signed under another token\'s domain', (offer) => ({ ...offer, extra: { name: 'USDC', version: '2' } }), 'invalid_exact_evm_payload_signature'],
  ]
  for (const [what, change, reason] of cases) {
    const { status, settled } = await paidWith(change)
    t.equal(status, 402, `${what}: 402`)
    t.equal(settled.success, false)
    t.equal(settled.errorReason, reason, `${what}: ${reason} (${settled.errorMessage})`)
    t.equal(settled.transaction, '')
  }
  const poor = await giftCall(deployment, 0n, 1_000_000n)
  const { settled } = await paidWith((offer) => offer, poor.account)
  t.equal(settled.errorReason, 'insufficient_funds', `a payer without the funds: ${settled.errorMessage}`)
  // Headers that are no v1 payment: 400.
  const both = await post({ call }, { 'x-payment': 'e30=', 'payment-signature': 'e30=' })
  t.equal(both.status, 400)
  t.match((await both.json()).error.message, /^send PAYMENT-SIGNATURE \(x402 v2\) or X-PAYMENT \(v1\), not both$/)
  const malformed = await post({ call }, { 'x-payment': Buffer.from(JSON.stringify({ x402Version: 1, scheme: 'exact', network: 'base', payload: {} })).toString('base64') })
  t.equal(malformed.status, 400)
  const answer = settlementOf(malformed)
  t.equal(answer.errorReason, 'invalid_payload')
  t.match(answer.errorMessage, /^X-PAYMENT\/payload/, 'naming the field')
  t.equal(await client.getTransactionCount({ address: operator }), nonceBefore, 'the runner sent nothing')
})

t.test('a stranger\'s signature on the account\'s transfer is no offered token\'s: refused before submit, nothing sent', async (t) => {
  const { account, call } = await giftCall(deployment, 50_000_000n, 1_000_000n)
  const nonceBefore = await client.getTransactionCount({ address: operator })
  const stranger = privateKeyToAccount(generatePrivateKey())
  let header = ''
  const capture: typeof fetch = async (input, init) => {
    const sent = new Headers(init?.headers).get('x-payment')
    if (sent) header = sent
    return fetch(input, init)
  }
  await wrapFetchWithPayment(capture, wallet(stranger), MAX_USDC)(endpoint, init(call))
  const forged = JSON.parse(Buffer.from(header, 'base64').toString('utf8'))
  forged.payload.authorization.from = account.address
  const response = await post({ call }, { 'x-payment': Buffer.from(JSON.stringify(forged)).toString('base64') })
  t.equal(response.status, 402)
  const settled = settlementOf(response)
  t.equal(settled.errorReason, 'invalid_exact_evm_payload_signature')
  t.equal(settled.errorMessage, `the signature is not ${account.address}'s under the EIP-712 domain of any token offered (USDC 0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913): sign the transfer as the 402 offered it`)
  t.equal(await client.getTransactionCount({ address: operator }), nonceBefore, 'the runner sent nothing')
})
