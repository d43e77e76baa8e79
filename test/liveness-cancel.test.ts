import t from 'tap'
import { isAddressEqual, keccak256, parseTransaction, type Hex } from 'viem'
import { waitFor } from './fixtures/waitFor.ts'
import { adversaryChain } from './adversarial/adversary.ts'
import { broadcasts } from './liveness/chaosProxy.ts'
import { consecutiveFromZero, startLivenessBruno } from './liveness/livenessBruno.ts'

// Issue 13, "A relay no client can stop": a transaction that is never included must not hold every
// later nonce behind it. Past `runner.maxSendingMs` (here its least, 10 s) the runner takes the nonce
// back with a 0-value self-transfer at it; the submission fails "cancelled: …", and the next one is done.
// Blocks are mined by hand while it waits (anvil's automine off), and replacements are kept out of the
// way (stuckAfterMs 60 s), so the one thing that moves the nonce is the cancellation.

const MAX_SENDING_MS = 10_000
const bruno = await startLivenessBruno(t, {
  pollMs: 100,
  stuckAfterMs: 60_000,
  configure: (network) => ({ ...network, runner: { ...network.runner, maxSendingMs: MAX_SENDING_MS } }),
})
bruno.allowCancellations(1)
const { mcp, chaos } = bruno
const chain = adversaryChain(bruno)
const status = (id: string) => mcp.call('status', { id })
const quoteOf = async (call: { to: Hex; data: Hex }) => BigInt((await mcp.call('quote', { chain: 'local', call, token: 'USDC', payment: 'authorization' })).amountBaseUnits)

t.test('a transaction never included is cancelled past runner.maxSendingMs; the nonce is the cancellation\'s and the next submission is done', async (t) => {
  t.equal(bruno.config.networks[0]!.runner.maxSendingMs, MAX_SENDING_MS, 'runner.maxSendingMs is 10 s')
  const payer = await bruno.payer()
  const call = bruno.readCall(payer.address)
  const payeeBefore = await chain.usdcOf(bruno.payee)
  const payerBefore = await chain.usdcOf(payer.address)
  const nonce = await chain.client.getTransactionCount({ address: bruno.runner })
  const broadcastsBefore = broadcasts(chaos).length

  await chain.testClient.setAutomine(false)
  let stuck: any
  let cancelledAfterMs = 0
  try {
    const submitted = await mcp.call('submit', { chain: 'local', call, payment: await bruno.payment(payer.key, await quoteOf(call)) })
    stuck = await waitFor(() => status(submitted.id), (view) => view.stage === 'sending', 'the relay sent')
    const sentAt = Date.now()
    t.equal(stuck.transaction.nonce, nonce, `the relay holds nonce ${nonce}`)
    // Nothing mines it. Past maxSendingMs the runner broadcasts a self-transfer at the same nonce.
    const isCancel = (raw: string) => {
      const transaction = parseTransaction(raw as Hex)
      return transaction.data === undefined && transaction.to !== undefined && isAddressEqual(transaction.to!, bruno.runner)
    }
    const sent = await waitFor(
      async () => broadcasts(chaos).slice(broadcastsBefore).map((broadcast) => broadcast.raw),
      (raws) => raws.some(isCancel),
      'the cancellation broadcast',
      MAX_SENDING_MS + 10_000,
      100,
    )
    cancelledAfterMs = Date.now() - sentAt
    const cancelRaw = sent.find(isCancel)!
    // The node has it (in place of the relay, which it outbids) before the block is mined.
    await waitFor(() => chain.client.getTransaction({ hash: keccak256(cancelRaw as Hex) }).then(() => true, () => false), Boolean, 'the cancellation in the pool', 10_000, 25)
    const selfTransfers = sent.filter(isCancel).map((raw) => parseTransaction(raw as Hex))
    t.equal(selfTransfers.length, 1, 'one cancellation')
    t.equal(selfTransfers[0]!.nonce, nonce, 'at the relay\'s nonce')
    t.equal(selfTransfers[0]!.value ?? 0n, 0n, 'of 0 ETH')
    t.ok(cancelledAfterMs >= MAX_SENDING_MS - 500, `not before maxSendingMs: ${cancelledAfterMs} ms after the relay was sent`)
    t.equal((await status(submitted.id)).stage, 'sending', 'the submission waits for the cancellation to be included')
    await chain.testClient.mine({ blocks: 1 })
  } finally {
    await chain.testClient.setAutomine(true)
  }

  const failed = await waitFor(() => status(stuck.id), (view) => view.stage === 'failed' || view.stage === 'done', 'the cancelled submission settled')
  t.comment(`figure | relay seen sending → cancellation broadcast: ${cancelledAfterMs} ms (runner.maxSendingMs ${MAX_SENDING_MS})`)
  t.equal(failed.stage, 'failed', 'the submission failed')
  t.match(failed.reason, /^cancelled: /, `its reason starts "cancelled:": ${failed.reason}`)
  t.match(failed.reason, `not included within ${MAX_SENDING_MS / 1000} s`, 'and says why')
  t.equal(failed.transaction.nonce, nonce, 'the failed submission names the nonce')

  const onChain = await bruno.runnerTransactions()
  const atNonce = onChain.filter((transaction) => transaction.nonce === nonce)
  t.same(atNonce.map((transaction) => transaction.kind), ['cancel'], 'the nonce was taken by the cancellation: a 0-value self-transfer')
  t.equal(failed.transaction.hash, atNonce[0]!.hash, 'the status names the cancellation\'s hash')
  t.notOk(await chain.client.getTransactionReceipt({ hash: stuck.transaction.hash }).catch(() => undefined), 'the relay itself was never included')
  t.equal(await chain.usdcOf(bruno.payee), payeeBefore, 'the payee got nothing')
  t.equal(await chain.usdcOf(payer.address), payerBefore, 'the payer kept its USDC: its transfer never ran')
  t.equal(failed.outcome, undefined, 'no outcome: nothing ran')

  const next = await mcp.call('submit', { chain: 'local', call, payment: await bruno.payment(payer.key, await quoteOf(call)) })
  const done = await waitFor(() => status(next.id), (view) => view.stage === 'done' || view.stage === 'failed', 'the next submission')
  t.equal(done.stage, 'done', 'the next submission is done')
  t.equal(done.transaction.nonce, nonce + 1, 'at the nonce after the cancellation')
  const nonces = (await bruno.runnerTransactions()).map((transaction) => transaction.nonce)
  t.ok(consecutiveFromZero(nonces), `the runner's nonces on chain have no hole: ${nonces.join(', ')}`)
})
