import { x402Client } from '@x402/core/client'
import { decodePaymentRequiredHeader, decodePaymentResponseHeader, encodePaymentSignatureHeader } from '@x402/core/http'
import type { PaymentPayload, PaymentRequired } from '@x402/core/types'
import { ExactEvmScheme } from '@x402/evm/exact/client'
import { wrapFetchWithPayment, wrapFetchWithPaymentFromConfig } from '@x402/fetch'
import { appendPaymentIdentifierToExtensions, declarePaymentIdentifierExtension, generatePaymentId, PAYMENT_IDENTIFIER } from '@x402/extensions/payment-identifier'
import t from 'tap'
import { createPublicClient, createTestClient, encodeFunctionData, erc20Abi, getAddress, http, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { chargedAtCost, startDevnetBruno } from './fixtures/devnetBruno.ts'
import { giftCall } from './fixtures/giftCall.ts'
import { transferWithAuthorizationTypedData } from '../plugins/3009/typedData.ts'
import { waitFor } from './fixtures/waitFor.ts'

// x402 (issue 30) with the official client, unmodified: @x402/fetch's wrapFetchWithPaymentFromConfig and @x402/evm's
// ExactEvmScheme over a viem local account, against Bruno on the devnet through the production-parity proxy. A 0-ETH
// account holding only USDC pays a friend by one fetch; the runner-ledger teardown holds (spent ≤ received).

const bruno = await startDevnetBruno(t, { groups: ['bruno'] })
const { deployment } = bruno
const client = createPublicClient({ transport: http(deployment.rpcUrl) })
const network = `eip155:${deployment.chainId}` as const
const endpoint = `${bruno.server.url}/local/v1/x402`
const payee = getAddress(bruno.config.networks[0]!.payee)
const usdcOf = (address: Hex) => client.readContract({ address: deployment.usdc, abi: erc20Abi, functionName: 'balanceOf', args: [address] })

/** The official client, allowed the devnet's USDC (it pays only a short built-in list of tokens by default). */
const payingFetch = (account: ReturnType<typeof privateKeyToAccount>) =>
  wrapFetchWithPaymentFromConfig(fetch, {
    schemes: [{ network: 'eip155:*', client: new ExactEvmScheme(account) }],
    spendControls: { allowedAssets: [{ network, asset: deployment.usdc }] },
  })

const post = (body: unknown, headers: Record<string, string> = {}) =>
  fetch(endpoint, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })

t.test('a USDC-only account with no ETH pays a friend by one fetch of the official client', async (t) => {
  const { account, friend, call } = await giftCall(deployment, 50_000_000n, 10_000_000n)
  t.equal(await client.getBalance({ address: account.address }), 0n, 'no ETH')
  const payeeBefore = await usdcOf(payee)
  const response = await payingFetch(account)(endpoint, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ call }) })
  const body = await response.json()
  t.equal(response.status, 200, JSON.stringify(body))
  const settled = decodePaymentResponseHeader(response.headers.get('payment-response')!)
  t.equal(settled.success, true)
  t.equal(settled.network, network)
  t.equal(getAddress(settled.payer!), account.address)
  t.match(settled.transaction, /^0x[0-9a-f]{64}$/)
  t.equal(body.stage, 'done')
  t.equal(body.transaction.hash, settled.transaction, 'the body is the submission, its hash the settlement\'s')
  t.same(body.outcome.callSucceeded, true)
  t.equal(await usdcOf(friend), 10_000_000n, 'the friend has the gift')
  const paid = (await usdcOf(payee)) - payeeBefore
  t.equal(BigInt(body.outcome.chargedBaseUnits), paid, 'the payee kept what the outcome says it charged')
  t.equal(BigInt(body.outcome.chargedBaseUnits) + BigInt(body.outcome.refundedBaseUnits), BigInt(body.outcome.paidBaseUnits), 'and refunded the rest of the x402 payment in the same transaction')
  t.ok(BigInt(body.outcome.refundedBaseUnits) > 0n, `refunded ${body.outcome.refundedBaseUnits} of ${body.outcome.paidBaseUnits}`)
  t.equal(await usdcOf(account.address), 40_000_000n - paid, 'the account paid the gift and Bruno, nothing else')
  const receipt = await client.getTransactionReceipt({ hash: settled.transaction as Hex })
  t.equal(receipt.status, 'success', 'one transaction: the payment, then the call')
  await chargedAtCost(t, bruno, receipt.transactionHash, 'x402')
})

t.test('the first answer: 402 with PAYMENT-REQUIRED (x402 v2, one exact offer in USDC, its EIP-712 domain) and the quote', async (t) => {
  const { call } = await giftCall(deployment, 50_000_000n, 1_000_000n)
  const response = await post({ call })
  t.equal(response.status, 402)
  t.equal(response.headers.get('cache-control'), 'no-store')
  t.match(response.headers.get('access-control-expose-headers'), /PAYMENT-REQUIRED, PAYMENT-RESPONSE/)
  const required = decodePaymentRequiredHeader(response.headers.get('payment-required')!)
  t.equal(required.x402Version, 2)
  t.equal(required.accepts.length, 1)
  const [offer] = required.accepts
  const body = await response.json()
  const [quote] = body.quotes
  t.same(offer, { scheme: 'exact', network, amount: quote.amountBaseUnits, asset: deployment.usdc, payTo: payee, maxTimeoutSeconds: 300, extra: { name: 'USD Coin', version: '2' } })
  t.notOk('accepts' in body, 'x402 v1 names no chain 31337: the body offers it nothing')
  t.match(required.resource.url, /\/local\/v1\/x402$/)
  t.same(required.extensions, { [PAYMENT_IDENTIFIER]: declarePaymentIdentifierExtension() }, 'the payment-identifier extension, declared as the official package declares it')
  // a call the relay refuses: 402, its reason, no offer
  const refused = await post({ call: { to: deployment.usdc, data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [payee, 1n] }) } })
  t.equal(refused.status, 402)
  const nothing = decodePaymentRequiredHeader(refused.headers.get('payment-required')!)
  t.same(nothing.accepts, [])
  t.match(nothing.error, /^cannot quote: the call fails in simulation from Bruno's Runner contract .*transfer_authorization/)
  t.same(await refused.json(), { error: nothing.error, quotes: [] }, 'the body says it too')
})

/** A payment payload as the official client makes it for `required` (optionally changed first), signed by `signer`. */
async function paymentFor(required: PaymentRequired, signer: ReturnType<typeof privateKeyToAccount>, change?: (offer: PaymentRequired['accepts'][number]) => void): Promise<PaymentPayload> {
  const offer = structuredClone(required.accepts[0]!)
  change?.(offer)
  const x402 = x402Client.fromConfig({ schemes: [{ network: 'eip155:*', client: new ExactEvmScheme(signer) }], spendControls: false })
  return x402.createPaymentPayload({ ...required, accepts: [offer] })
}

t.test('each bad payment gets x402\'s error code in PAYMENT-RESPONSE, and nothing is sent', async (t) => {
  const { account, call } = await giftCall(deployment, 50_000_000n, 1_000_000n)
  const nonceBefore = await client.getTransactionCount({ address: bruno.deployment.runner.operator.address })
  const required = decodePaymentRequiredHeader((await post({ call })).headers.get('payment-required')!)
  const answer = async (payload: PaymentPayload) => {
    const response = await post({ call }, { 'payment-signature': encodePaymentSignatureHeader(payload) })
    return { status: response.status, settled: decodePaymentResponseHeader(response.headers.get('payment-response')!) }
  }
  const cases: [string, PaymentPayload, string][] = [
    ['a value below the price', await paymentFor(required, account, (offer) => (offer.amount = '1')), 'invalid_exact_evm_payload_authorization_value_mismatch'],
    ['another network', { ...(await paymentFor(required, account)), accepted: { ...required.accepts[0]!, network: 'eip155:8453' } }, 'invalid_network'],
    ['another payTo', await paymentFor(required, account, (offer) => (offer.payTo = account.address)), 'invalid_exact_evm_payload_recipient_mismatch'],
    ['too short a validity', await paymentFor(required, account, (offer) => (offer.maxTimeoutSeconds = 20)), 'invalid_exact_evm_payload_authorization_valid_before'],
    ['another scheme', { ...(await paymentFor(required, account)), accepted: { ...required.accepts[0]!, scheme: 'upto' } }, 'unsupported_scheme'],
  ]
  const plain = await paymentFor(required, account)
  cases.push(['x402Version 1 in PAYMENT-SIGNATURE', { ...plain, x402Version: 1 }, 'invalid_x402_version'])
  cases.push(['an asset Bruno does not offer', { ...plain, accepted: { ...plain.accepted, asset: deployment.weth } }, 'invalid_payment_requirements'])
  // Signed as the client signs, but valid only from an hour on: the token refuses it until then.
  const early = (plain.payload as { authorization: Record<string, string> }).authorization
  const validAfter = BigInt(Math.floor(Date.now() / 1000) + 3600)
  const typedData = transferWithAuthorizationTypedData({
    token: { address: deployment.usdc, name: 'USD Coin', version: '2', chainId: deployment.chainId },
    from: account.address,
    to: payee,
    value: BigInt(early.value!),
    validAfter,
    validBefore: validAfter + 600n,
    nonce: early.nonce as Hex,
  })
  const notYet = { ...plain, payload: { authorization: typedData.message, signature: await account.signTypedData(typedData as never) } }
  cases.push(['a transfer valid only later', notYet, 'invalid_exact_evm_payload_authorization_valid_after'])
  const stranger = privateKeyToAccount(generatePrivateKey())
  const forged = await paymentFor(required, stranger)
  const payload = forged.payload as { authorization: { from: string } }
  cases.push(['signed by another key', { ...forged, payload: { ...forged.payload, authorization: { ...payload.authorization, from: account.address } } }, 'invalid_exact_evm_payload_signature'])
  const poor = await giftCall(deployment, 0n, 1_000_000n)
  cases.push(['a payer without the funds', await paymentFor(required, poor.account), 'insufficient_funds'])
  // Where the binding refuses before submit, its own words: the field and what Bruno takes.
  const words: Record<string, RegExp> = {
    'another payTo': new RegExp(`^payTo ${account.address} is not the payee ${payee}$`),
    'another network': /^network "eip155:8453": this chain is eip155:31337$/,
    'another scheme': /^scheme "upto": Bruno takes "exact"$/,
    'x402Version 1 in PAYMENT-SIGNATURE': /^x402Version 1 in PAYMENT-SIGNATURE: that header is version 2's \(version 1 sends X-PAYMENT\)$/,
    'an asset Bruno does not offer': new RegExp(`^asset ${deployment.weth} is not one Bruno offers here \\(USDC ${deployment.usdc}\\)$`),
  }
  for (const [what, payment, reason] of cases) {
    const { status, settled } = await answer(payment)
    const message = (settled as { errorMessage?: string }).errorMessage ?? ''
    t.equal(status, 402, `${what}: 402`)
    t.equal(settled.success, false)
    t.equal(settled.errorReason, reason, `${what}: ${reason} (${message})`)
    if (words[what]) t.match(message, words[what], `${what}: said by the binding`)
    t.equal(settled.transaction, '')
  }
  // a payload missing a field of the offer it took: 400, naming the field
  const { asset: _asset, ...withoutAsset } = plain.accepted
  const incomplete = await post({ call }, { 'payment-signature': encodePaymentSignatureHeader({ ...plain, accepted: withoutAsset } as never) })
  t.equal(incomplete.status, 400)
  t.match(decodePaymentResponseHeader(incomplete.headers.get('payment-response')!).errorMessage, /^PAYMENT-SIGNATURE\/accepted\/asset: /)
  // a body with more than the call: 400, nothing paid for
  const extra = await post({ call, memo: 'hi' })
  t.equal(extra.status, 400)
  t.equal((await extra.json()).error.code, 'invalid_request')
  // a header that is no payload: 400
  const malformed = await post({ call }, { 'payment-signature': 'not base64 of json' })
  t.equal(malformed.status, 400)
  t.equal(decodePaymentResponseHeader(malformed.headers.get('payment-response')!).errorReason, 'invalid_payload')
  // a v1 payment (X-PAYMENT) on a chain x402 v1 has no name for: 402 invalid_network, in v1's header
  const v2 = await paymentFor(required, account)
  const v1 = { x402Version: 1, scheme: 'exact', network: 'base', payload: v2.payload }
  const unnamed = await post({ call }, { 'x-payment': Buffer.from(JSON.stringify(v1)).toString('base64') })
  t.equal(unnamed.status, 402)
  t.equal(unnamed.headers.get('payment-response'), null, 'answered in v1\'s header only')
  const v1Answer = JSON.parse(Buffer.from(unnamed.headers.get('x-payment-response')!, 'base64').toString('utf8'))
  t.same(v1Answer, {
    success: false,
    errorReason: 'invalid_network',
    errorMessage: `x402 version 1 has no name for chain id ${deployment.chainId}: pay with version 2 (network ${network})`,
    transaction: '',
    network,
  })
  t.equal(await client.getTransactionCount({ address: bruno.deployment.runner.operator.address }), nonceBefore, 'the runner sent nothing')
})

t.test('20 concurrent retries of one signed payment: one submission, one transaction, the same answer to each', async (t) => {
  const { account, call } = await giftCall(deployment, 50_000_000n, 1_000_000n)
  const required = decodePaymentRequiredHeader((await post({ call })).headers.get('payment-required')!)
  const header = encodePaymentSignatureHeader(await paymentFor(required, account))
  const nonceBefore = await client.getTransactionCount({ address: bruno.deployment.runner.operator.address })
  const answers = await Promise.all(Array.from({ length: 20 }, () => post({ call }, { 'payment-signature': header })))
  const settled = answers.map((response) => decodePaymentResponseHeader(response.headers.get('payment-response')!))
  t.same([...new Set(answers.map((response) => response.status))], [200])
  t.equal(new Set(settled.map((each) => each.transaction)).size, 1, 'one transaction hash')
  t.equal(await client.getTransactionCount({ address: bruno.deployment.runner.operator.address }), nonceBefore + 1, 'the runner sent once')
  // Sent again once it is done (its authorization spent): the same submission answers, nothing is sent.
  const late = await post({ call }, { 'payment-signature': header })
  t.equal(late.status, 200)
  t.equal(decodePaymentResponseHeader(late.headers.get('payment-response')!).transaction, settled[0]!.transaction, 'a retry after the settlement gets the settlement')
  t.equal(await client.getTransactionCount({ address: bruno.deployment.runner.operator.address }), nonceBefore + 1, 'still once')
  // A new payment for the same call, now spent: the relay refuses it in simulation, untaken (402 invalid_payload, its words).
  const spent = await post({ call }, { 'payment-signature': encodePaymentSignatureHeader(await paymentFor(required, account)) })
  const refused = decodePaymentResponseHeader(spent.headers.get('payment-response')!)
  t.equal(spent.status, 402)
  t.equal(refused.errorReason, 'invalid_payload')
  t.match(refused.errorMessage, /the call fails in simulation.*authorization is used/)
  t.equal(await client.getTransactionCount({ address: bruno.deployment.runner.operator.address }), nonceBefore + 1, 'nothing sent for it')
})

t.test('payment-identifier: the same payload under its id is answered by its submission; another payload under that id is 409, untaken', async (t) => {
  const { account, call } = await giftCall(deployment, 50_000_000n, 1_000_000n)
  const operator = bruno.deployment.runner.operator.address
  const nonceBefore = await client.getTransactionCount({ address: operator })
  const required = decodePaymentRequiredHeader((await post({ call })).headers.get('payment-required')!)
  // The official client, adding an id through its hook as the extension's own helpers do; every payment header it sends is kept.
  const id = generatePaymentId()
  const sent: string[] = []
  const recording: typeof fetch = (input, init) => {
    const request = new Request(input, init)
    const header = request.headers.get('payment-signature')
    if (header) sent.push(header)
    return fetch(request)
  }
  const x402 = x402Client.fromConfig({ schemes: [{ network: 'eip155:*', client: new ExactEvmScheme(account) }], spendControls: { allowedAssets: [{ network, asset: deployment.usdc }] } })
  x402.onBeforePaymentCreation(async ({ paymentRequired }) => {
    appendPaymentIdentifierToExtensions((paymentRequired.extensions ??= {}), id)
  })
  const first = await wrapFetchWithPayment(recording, x402)(endpoint, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ call }) })
  t.equal(first.status, 200)
  const settled = decodePaymentResponseHeader(first.headers.get('payment-response')!)
  t.equal(sent.length, 1)
  const payload = JSON.parse(Buffer.from(sent[0]!, 'base64').toString('utf8')) as PaymentPayload
  t.equal((payload.extensions?.[PAYMENT_IDENTIFIER] as { info: { id: string } }).info.id, id, 'the client sent its id')
  const balance = await usdcOf(account.address)

  const again = await post({ call }, { 'payment-signature': sent[0]! })
  t.equal(again.status, 200, 'the same payload, again: its answer')
  t.equal(decodePaymentResponseHeader(again.headers.get('payment-response')!).transaction, settled.transaction)
  t.equal((await again.json()).id, (await first.json()).id, 'the same submission')

  appendPaymentIdentifierToExtensions(required.extensions!, id)
  const other = await post({ call }, { 'payment-signature': encodePaymentSignatureHeader(await paymentFor(required, account)) })
  t.equal(other.status, 409, 'another payment under the same id')
  t.equal((await other.clone().json()).error.code, 'conflict')
  t.match((await other.json()).error.message, new RegExp(`^the payment id ${id} was given with another payment: send that payment again as it was, or give this one a new id; nothing was taken$`))

  const badId = await paymentFor(required, account)
  const malformed = await post({ call }, { 'payment-signature': encodePaymentSignatureHeader({ ...badId, extensions: { [PAYMENT_IDENTIFIER]: { info: { required: false, id: 'short' } } } }) })
  t.equal(malformed.status, 400)
  t.match(decodePaymentResponseHeader(malformed.headers.get('payment-response')!).errorMessage, /payment-identifier.*16 to 128/)
  t.equal(await client.getTransactionCount({ address: operator }), nonceBefore + 1, 'one transaction in all')
  t.equal(await usdcOf(account.address), balance, 'nothing more taken')
})

t.test('not mined within x402.holdSec: 202 settlement_pending with the hash, and the submission goes on to done; one held request too many is refused untaken; included but not yet confirmed is still pending', async (t) => {
  // Two confirmations (issue 44, point 5): a payment served while its transaction could still be reorged out would be a resource given for nothing.
  const held = await startDevnetBruno(t, {
    groups: ['bruno'],
    configure: (config) => ({ ...config, x402: { ...config.x402, holdSec: 3, maxHeld: 1 }, networks: config.networks.map((each) => ({ ...each, runner: { ...each.runner, confirmations: 2 } })) }),
  })
  const chain = createTestClient({ mode: 'anvil', transport: http(held.deployment.rpcUrl) })
  const { account, friend, call } = await giftCall(held.deployment, 50_000_000n, 1_000_000n)
  await chain.setAutomine(false)
  const heldClient = createPublicClient({ transport: http(held.deployment.rpcUrl) })
  const operator = held.deployment.runner.operator.address
  let paidHeader = ''
  const recording: typeof fetch = (input, init) => {
    const request = new Request(input, init)
    paidHeader ||= request.headers.get('payment-signature') ?? ''
    return fetch(request)
  }
  const pay = wrapFetchWithPaymentFromConfig(recording, { schemes: [{ network: 'eip155:*', client: new ExactEvmScheme(account) }], spendControls: { allowedAssets: [{ network, asset: held.deployment.usdc }] } })
  const url = `${held.server.url}/local/v1/x402`
  const first = pay(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ call }) })
  await waitFor(() => heldClient.getTransactionCount({ address: operator, blockTag: 'pending' }), (count) => count > 0, 'the runner\'s transaction in the pool', 15_000)
  // A retry of the held payment is held beside it (it is no second payment), and answered alike.
  const retry = fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'payment-signature': paidHeader }, body: JSON.stringify({ call }) })
  // While it is held, a second paid request of the same client (x402.maxHeld 1) is refused before its payment is taken.
  const required = decodePaymentRequiredHeader((await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ call }) })).headers.get('payment-required')!)
  const second = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'payment-signature': encodePaymentSignatureHeader(await paymentFor(required, account)) }, body: JSON.stringify({ call }) })
  t.equal(second.status, 429, 'one held request per client here')
  t.equal((await second.clone().json()).error.code, 'rate_limited')
  t.match((await second.json()).error.message, /already held \(x402\.maxHeld 1\): send this one again when one is answered; nothing was taken$/)
  const response = await first
  const body = await response.json()
  t.equal(response.status, 202, JSON.stringify(body))
  const settled = decodePaymentResponseHeader(response.headers.get('payment-response')!)
  t.equal(settled.success, false)
  t.equal(settled.errorReason, 'settlement_pending')
  t.match(settled.transaction, /^0x[0-9a-f]{64}$/, 'the hash of what was sent')
  t.equal(body.stage, 'sending')
  const retried = await retry
  t.equal(retried.status, 202, 'the retry was held too, not refused')
  t.equal(decodePaymentResponseHeader(retried.headers.get('payment-response')!).transaction, settled.transaction, 'naming the same transaction')
  await chain.mine({ blocks: 1 })
  const statusOf = () => fetch(`${held.server.url}/v1/status/${body.id}`).then((reply) => reply.json())
  await waitFor(statusOf, (status) => status.stage === 'confirming', 'included, one confirmation of two', 15_000)
  const confirming = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'payment-signature': paidHeader }, body: JSON.stringify({ call }) })
  t.equal(confirming.status, 202, 'included but not confirmed: still pending, the resource not served')
  t.equal(decodePaymentResponseHeader(confirming.headers.get('payment-response')!).errorReason, 'settlement_pending')
  t.equal((await confirming.json()).stage, 'confirming')
  await chain.mine({ blocks: 1 })
  const done = await waitFor(statusOf, (status) => status.stage === 'done', 'done', 15_000)
  t.equal(done.transaction.hash, settled.transaction, 'settled by the very transaction it named')
  const confirmed = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'payment-signature': paidHeader }, body: JSON.stringify({ call }) })
  t.equal(confirmed.status, 200, 'confirmed: served')
  await chain.setAutomine(true)
  const heldChain = createPublicClient({ transport: http(held.deployment.rpcUrl) })
  t.equal(await heldChain.readContract({ address: held.deployment.usdc, abi: erc20Abi, functionName: 'balanceOf', args: [friend] }), 1_000_000n, 'the friend has the gift')
  // Both held requests answered, the client holds nothing: its next payment is taken and answered (200), not refused.
  const next = await giftCall(held.deployment, 50_000_000n, 1_000_000n)
  const nextPay = wrapFetchWithPaymentFromConfig(fetch, { schemes: [{ network: 'eip155:*', client: new ExactEvmScheme(next.account) }], spendControls: { allowedAssets: [{ network, asset: held.deployment.usdc }] } })
  const nonce = await heldClient.getTransactionCount({ address: operator })
  const after = nextPay(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ call: next.call }) })
  // Its transaction mined at once (automine); its second confirmation is the next block.
  await waitFor(() => heldClient.getTransactionCount({ address: operator }), (count) => count > nonce, 'the next relay included', 15_000)
  await chain.mine({ blocks: 1 })
  t.equal((await after).status, 200, 'a held slot is given back once its requests are answered')
})

t.test('a call that fails on chain after the payment: 200, the payment settled, the body saying the call failed and why', async (t) => {
  const chain = createTestClient({ mode: 'anvil', transport: http(deployment.rpcUrl) })
  const { account, friend, call } = await giftCall(deployment, 50_000_000n, 2_000_000n)
  // Someone else runs the very gift first (it acts by signature: anyone may send it), outbidding the runner in the same block.
  const sponsor = privateKeyToAccount(generatePrivateKey())
  await chain.setBalance({ address: sponsor.address, value: 10n ** 18n })
  const operator = bruno.deployment.runner.operator.address
  const sentBefore = await client.getTransactionCount({ address: operator, blockTag: 'pending' })
  await chain.setAutomine(false)
  try {
    const answer = payingFetch(account)(endpoint, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ call }) })
    await waitFor(() => client.getTransactionCount({ address: operator, blockTag: 'pending' }), (count) => count > sentBefore, 'the runner\'s transaction in the pool', 15_000)
    const raw = await sponsor.signTransaction({
      chainId: deployment.chainId,
      to: call.to,
      data: call.data,
      gas: 150_000n,
      nonce: 0,
      maxFeePerGas: 200_000_000_000n,
      maxPriorityFeePerGas: 50_000_000_000n,
      type: 'eip1559',
    })
    const front = await client.sendRawTransaction({ serializedTransaction: raw })
    await chain.mine({ blocks: 1 })
    const response = await answer
    const body = await response.json()
    t.equal(response.status, 200, 'the payment settled: 200')
    const settled = decodePaymentResponseHeader(response.headers.get('payment-response')!)
    t.equal(settled.success, true)
    const [relayed, fronted] = await Promise.all([settled.transaction, front].map((hash) => client.getTransactionReceipt({ hash: hash as Hex })))
    t.equal(relayed!.blockNumber, fronted!.blockNumber, 'both in one block, the other first')
    t.equal(body.stage, 'done')
    t.equal(body.outcome.callSucceeded, false, 'the call failed on chain')
    t.match(body.outcome.callReason, /authorization is used/, `and says why: ${body.outcome.callReason}`)
    t.ok(BigInt(body.outcome.paidBaseUnits) > 0n, 'the payee was paid all the same')
    t.equal(await usdcOf(friend), 2_000_000n, 'the gift arrived once, by the other sender')
  } finally {
    await chain.setAutomine(true)
  }
})
