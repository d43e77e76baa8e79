import t from 'tap'
import { encodeFunctionData, getAddress, parseSignature, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { eip3009Abi } from '../../plugins/3009/abi.ts'
import { randomAuthorizationNonce, transferWithAuthorizationTypedData } from '../../plugins/3009/typedData.ts'
import { startDevnetBruno } from '../fixtures/devnetBruno.ts'
import { RawMcpClient } from '../fixtures/mcpHttp.ts'
import { waitFor } from '../fixtures/waitFor.ts'
import { adversaryChain, bindings, quotedPayer, type Binding } from './adversary.ts'

// Issue 27, point 4: a payment valid exactly relay.paymentMarginSec was accepted, sent, then cancelled at the
// runner's next look (its payment now within the margin): the runner paid each 21k-gas cancellation, counted against
// no one (24 of 24 in three waves). Now a payment must be valid for the margin plus the time a sent transaction may
// take to be included (relay.inclusionSec), at submit and at every send; and a relay cancelled
// because its payment came within the margin is a fault of its payer, who chose that expiry: counted against the
// payer and the client, so the cancellations one party can cause are bounded by admission's ban.

const MARGIN_SEC = 2
const INCLUSION_SEC = 1
const LEAST_SEC = MARGIN_SEC + INCLUSION_SEC
const BAN_AFTER = 3
const bruno = await startDevnetBruno(t, {
  groups: ['bruno'],
  pollMs: 100,
  stuckAfterMs: 1_000,
  configure: (config) => {
    const [network] = config.networks
    const admission = { ...network!.relay.admission, account: { maxActive: 8, throttleAfter: 2, banAfter: BAN_AFTER } }
    return { ...config, networks: [{ ...network!, relay: { ...network!.relay, paymentMarginSec: MARGIN_SEC, inclusionSec: INCLUSION_SEC, admission } }] }
  },
})
const { deployment } = bruno
const chain = adversaryChain(bruno)
const mcp = new RawMcpClient(`${bruno.mcpUrl}/bruno`)
const api = bindings(bruno, mcp)
const BINDINGS: readonly Binding[] = ['mcp', 'rest', 'rpc']
const payee = getAddress(bruno.config.networks[0]!.payee)
const token = { address: deployment.usdc, name: 'USD Coin', version: '2', chainId: deployment.chainId }

/** A transfer to the payee signed by `key`, valid `validForSec` from now by the clock. */
async function paymentValidFor(key: Hex, amount: bigint, validForSec: number) {
  const account = privateKeyToAccount(key)
  const validBefore = BigInt(Math.floor(Date.now() / 1000) + validForSec)
  const typedData = transferWithAuthorizationTypedData({ token, from: account.address, to: payee, value: amount, validAfter: 0n, validBefore, nonce: randomAuthorizationNonce() })
  return { token: deployment.usdc, authorization: typedData.message, signature: await account.signTypedData(typedData as never) }
}

const payer = () => quotedPayer(bruno, chain, mcp)

/**
 * Flow 2's call: `key`'s signed transferWithAuthorization of 1 USDC to a fresh friend, valid `validForSec`
 * from now by the clock (issue 43, point 9: a call expiring before its payment was sent, and failed on chain, paid).
 */
async function signedCallValidFor(key: Hex, validForSec: number) {
  const account = privateKeyToAccount(key)
  const friend = privateKeyToAccount(generatePrivateKey()).address
  const validBefore = BigInt(Math.floor(Date.now() / 1000) + validForSec)
  const typedData = transferWithAuthorizationTypedData({ token, from: account.address, to: friend, value: 1_000_000n, validAfter: 0n, validBefore, nonce: randomAuthorizationNonce() })
  const { v, r, s } = parseSignature(await account.signTypedData(typedData as never))
  const args = [account.address, friend, 1_000_000n, 0n, validBefore, typedData.message.nonce, Number(v), r, s] as const
  return { call: { to: deployment.usdc, data: encodeFunctionData({ abi: eip3009Abi, functionName: 'transferWithAuthorization', args }) }, validBefore }
}

/** Waits until the node holds the transaction `hash`: the runner stores what it sends before it broadcasts it. */
const atTheNode = (hash: Hex) => waitFor(() => chain.client.getTransaction({ hash }).catch(() => undefined), (sent) => sent !== undefined, `${hash} at the node`, 10_000, 25)

t.test(`a payment valid only paymentMarginSec (${MARGIN_SEC} s): refused at submit on every binding, naming the least validity; nothing is sent`, async (t) => {
  const one = await payer()
  const runnerNonce = await chain.client.getTransactionCount({ address: chain.runner })
  for (const binding of BINDINGS) {
    for (const validForSec of [MARGIN_SEC, LEAST_SEC - 1]) {
      const submitted = await api.submit(binding, { call: one.call, payment: await paymentValidFor(one.key, one.amount, validForSec) })
      t.equal(submitted.accepted, false, `${binding}, valid ${validForSec} s: refused`)
      if (submitted.accepted) continue
      t.match(
        submitted.message,
        new RegExp(`too soon to send it safely: it must be valid at least ${LEAST_SEC} s more; sign a new one$`),
      )
    }
  }
  t.equal(await chain.client.getTransactionCount({ address: chain.runner }), runnerNonce, 'the runner sent nothing')
})

t.test(`a signed call valid less than paymentMarginSec + inclusionSec (${LEAST_SEC} s), its payment valid 10 min: refused at submit on every binding, naming the call's validBefore`, async (t) => {
  const one = await payer()
  const runnerNonce = await chain.client.getTransactionCount({ address: chain.runner })
  for (const binding of BINDINGS) {
    const signed = await signedCallValidFor(one.key, LEAST_SEC - 1)
    const submitted = await api.submit(binding, { call: signed.call, payment: await paymentValidFor(one.key, one.amount, 600) })
    t.equal(submitted.accepted, false, `${binding}: refused`)
    if (submitted.accepted) continue
    t.match(
      submitted.message,
      new RegExp(`^the call's signed transfer expires at ${signed.validBefore} \\(its validBefore; now \\d+\\), too soon to send it safely: it must be valid at least ${LEAST_SEC} s more; sign a new one \\(transfer_authorization\\)$`),
    )
  }
  t.equal(await chain.client.getTransactionCount({ address: chain.runner }), runnerNonce, 'the runner sent nothing')
})

t.test(`a payment valid just over the least, blocks held: cancelled at the margin, each cancellation a fault of the payer, refused after ${BAN_AFTER}`, async (t) => {
  const one = await payer()
  await chain.testClient.setAutomine(false)
  t.teardown(() => chain.testClient.setAutomine(true))
  for (const [index, binding] of BINDINGS.entries()) {
    // Quoted afresh: each cancellation's block raised the base fee.
    const quote = await mcp.call('quote', { chain: 'local', call: one.call, token: 'USDC', payment: 'authorization' })
    // A few seconds over the least, so that a loaded runner still sends it before it may no longer be sent.
    const submitted = await api.submit(binding, { call: one.call, payment: await paymentValidFor(one.key, BigInt(quote.amountBaseUnits), LEAST_SEC + 3) })
    t.equal(submitted.accepted, true, `${binding}: a payment valid just over the least is accepted${submitted.accepted ? '' : `: ${submitted.message}`}`)
    if (!submitted.accepted) continue
    // The cancellation is stored (with its reason) before it is broadcast: wait until the node holds it too.
    const cancelling = await waitFor(() => api.status(binding, submitted.id), (view) => /payment came within/.test(view.reason ?? '') || view.stage === 'failed' || view.stage === 'done', `${submitted.id} cancelled`, 15_000, 50)
    t.match(cancelling.reason, new RegExp(`^not included before its payment came within ${MARGIN_SEC} s of expiring`), `${binding}: cancelled for its payment's expiry`)
    await atTheNode(cancelling.transaction.hash)
    await chain.testClient.mine({ blocks: 1 })
    const view = await waitFor(() => api.status(binding, submitted.id), (view) => view.stage === 'failed', `${submitted.id} failed`, 15_000, 50)
    t.match(view.reason, new RegExp(`^cancelled: not included before its payment came within ${MARGIN_SEC} s of expiring`))
    bruno.allowCancellations(1)
    const entry = (await bruno.ledger()).find((candidate) => candidate.hash === view.transaction.hash)
    t.equal(entry?.gasUsed, 21_000n, `${binding}: the runner paid one cancellation (${entry?.spentWei} wei), cancellation ${index + 1} of this payer`)
  }
  const quote = await mcp.call('quote', { chain: 'local', call: one.call, token: 'USDC', payment: 'authorization' })
  const refused = await api.submit('mcp', { call: one.call, payment: await paymentValidFor(one.key, BigInt(quote.amountBaseUnits), 600) })
  t.equal(refused.accepted, false, `after ${BAN_AFTER} cancellations, the payer is refused`)
  if (!refused.accepted) {
    t.match(refused.message, new RegExp(`^refused: the account ${one.address} is refused until \\S+Z: ${BAN_AFTER} of its submissions failed by its own doing`))
  }
})

t.test(`a waiting submission whose payment has less than paymentMarginSec + inclusionSec (${LEAST_SEC} s) left fails unsent: the runner pays nothing`, async (t) => {
  const one = await payer()
  await chain.testClient.setAutomine(false)
  t.teardown(() => chain.testClient.setAutomine(true))
  const quote = await mcp.call('quote', { chain: 'local', call: one.call, token: 'USDC', payment: 'authorization' })
  const amount = BigInt(quote.amountBaseUnits)
  const first = await api.submit('rest', { call: one.call, payment: await paymentValidFor(one.key, amount, 600) })
  if (!first.accepted) return t.fail(`the first refused: ${first.message}`)
  const sent = await waitFor(() => api.status('rest', first.id), (view) => view.stage === 'sending', `${first.id} sent`, 10_000, 50)
  // Stored as sending before it is broadcast: the runner's count of pending nonces is read once the node holds it.
  await atTheNode(sent.transaction.hash)
  const runnerNonce = await chain.client.getTransactionCount({ address: chain.runner, blockTag: 'pending' })
  // Held behind the first (one transaction in flight per payer) until it may no longer be sent.
  const second = await api.submit('rpc', { call: one.call, payment: await paymentValidFor(one.key, amount, LEAST_SEC + 1) })
  if (!second.accepted) return t.fail(`the second refused: ${second.message}`)
  const failed = await waitFor(() => api.status('rpc', second.id), (view) => view.stage === 'failed', `${second.id} failed`, 15_000, 50)
  t.match(failed.reason, new RegExp(`^not sent: its payment expires at \\d+, within ${LEAST_SEC} s \\(waiting: ${one.address} has a transaction in flight; this one follows it\\)$`))
  t.equal(failed.transaction, undefined, 'never signed')
  t.equal(await chain.client.getTransactionCount({ address: chain.runner, blockTag: 'pending' }), runnerNonce, 'the runner sent nothing for it')
  await chain.testClient.mine({ blocks: 1 })
  const done = await waitFor(() => api.status('rest', first.id), (view) => view.stage === 'done' || view.stage === 'failed', `${first.id} settled`, 15_000, 50)
  t.equal(done.stage, 'done', 'the first went through')
  t.equal(done.transaction.nonce, sent.transaction.nonce, 'at the nonce it was sent at (replaced within its payment, as stuckAfterMs passed)')
})

t.test(`a waiting submission whose call's signed transfer has less than ${LEAST_SEC} s left fails unsent, its payment valid 10 min: nothing is paid for a call that would fail`, async (t) => {
  const one = await payer()
  await chain.testClient.setAutomine(false)
  t.teardown(() => chain.testClient.setAutomine(true))
  const quote = await mcp.call('quote', { chain: 'local', call: one.call, token: 'USDC', payment: 'authorization' })
  const first = await api.submit('mcp', { call: one.call, payment: await paymentValidFor(one.key, BigInt(quote.amountBaseUnits), 600) })
  if (!first.accepted) return t.fail(`the first refused: ${first.message}`)
  const sent = await waitFor(() => api.status('mcp', first.id), (view) => view.stage === 'sending', `${first.id} sent`, 10_000, 50)
  await atTheNode(sent.transaction.hash)
  const runnerNonce = await chain.client.getTransactionCount({ address: chain.runner, blockTag: 'pending' })
  // Held behind the first (one transaction in flight per payer) until its call may no longer be sent.
  const signed = await signedCallValidFor(one.key, LEAST_SEC + 2)
  const callQuote = await mcp.call('quote', { chain: 'local', call: signed.call, token: 'USDC', payment: 'authorization' })
  const second = await api.submit('rest', { call: signed.call, payment: await paymentValidFor(one.key, BigInt(callQuote.amountBaseUnits), 600) })
  if (!second.accepted) return t.fail(`the second refused: ${second.message}`)
  const failed = await waitFor(() => api.status('rest', second.id), (view) => view.stage === 'failed', `${second.id} failed`, 15_000, 50)
  t.match(failed.reason, new RegExp(`^not sent: its call's signed transfer expires at ${signed.validBefore}, within ${LEAST_SEC} s \\(waiting: ${one.address} has a transaction in flight; this one follows it\\)$`))
  t.equal(failed.transaction, undefined, 'never signed')
  t.equal(await chain.client.getTransactionCount({ address: chain.runner, blockTag: 'pending' }), runnerNonce, 'the runner sent nothing for it')
  await chain.testClient.mine({ blocks: 1 })
  const done = await waitFor(() => api.status('mcp', first.id), (view) => view.stage === 'done' || view.stage === 'failed', `${first.id} settled`, 15_000, 50)
  t.equal(done.stage, 'done', 'the first went through')
})
