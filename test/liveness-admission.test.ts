import t from 'tap'
import { encodeFunctionData, getAddress, parseAbi, parseTransaction, type Address, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { TX_MAX_SIZE } from './fixtures/parityProxy.ts'
import { waitFor } from './fixtures/waitFor.ts'
import { adversaryChain, bindings } from './adversarial/adversary.ts'
import { compileAdversaries } from './adversarial/harness.ts'
import { broadcasts } from './liveness/chaosProxy.ts'
import { startLivenessBruno } from './liveness/livenessBruno.ts'

// Issue 13, "A relay no client can stop": what submit refuses before anything is stored or sent
// (a transaction too large for a node's pool, a deadline past what the relay holds, a payment about to
// expire, a 3009 payer with code), and what it does with a client that submits the same payment many
// times, or two payments from one account at once.

// The 128 KiB test sends a call of 127 KB, whose revert would cost 5.2M gas: relay.maxRevertGas (default 300,000,
// test/adversarial/revert-cost.test.ts) is raised to the transaction cap so that the byte limit is what is tested.
const bruno = await startLivenessBruno(t, { pollMs: 100, configure: (network) => ({ ...network, relay: { ...network.relay, maxRevertGas: 16_777_216 } }) })
const { mcp, chaos } = bruno
const chain = adversaryChain(bruno)
const api = bindings(bruno, mcp)
const relay = bruno.config.networks[0]!.relay
const status = (id: string) => mcp.call('status', { id })
const settled = (id: string, what: string) => waitFor(() => status(id), (view) => view.stage === 'done' || view.stage === 'failed', what)
const runnerNonce = () => chain.client.getTransactionCount({ address: bruno.runner })
const quoteOf = async (call: { to: Address; data: Hex }) => BigInt((await mcp.call('quote', { chain: 'local', call, token: 'USDC', payment: 'authorization' })).amountBaseUnits)

/** Runs `body` with blocks mined only by hand; automine is back on afterwards. */
async function byHand<T>(body: () => Promise<T>): Promise<T> {
  await chain.testClient.setAutomine(false)
  try {
    return await body()
  } finally {
    await chain.testClient.setAutomine(true)
  }
}

/** Waits until the node has `hash` in its pool: the runner stores a transaction before it broadcasts it. */
const inPool = (hash: Hex) => waitFor(() => chain.client.getTransaction({ hash }).then(() => true, () => false), Boolean, `${hash} in the node's pool`, 10_000, 25)
/** Waits until `id` is sent and its transaction is in the node's pool; its status then. */
async function sentAndPooled(id: string, what: string) {
  const view = await waitFor(() => status(id), (view) => view.stage === 'sending', what)
  await inPool(view.transaction.hash)
  return view
}

const SINK = getAddress('0x5111c00000000000000000000000000000005111')
await chain.testClient.setCode({ address: SINK, bytecode: compileAdversaries().Sink!.code })
const sinkAbi = parseAbi(['function take(bytes data)'])
/** A call to the sink carrying `size` zero bytes (a multiple of 32, so that its ABI encoding adds no padding). */
const sinkCall = (size: number) => ({ to: SINK, data: encodeFunctionData({ abi: sinkAbi, functionName: 'take', args: [`0x${'00'.repeat(size)}`] }) })

t.test('oversized: a call whose runner transaction would pass 128 KiB is refused at submit, naming the limit; nothing is sent', async (t) => {
  t.equal(relay.maxTransactionBytes, TX_MAX_SIZE, 'relay.maxTransactionBytes defaults to the 128 KiB geth and reth accept')
  const payer = await bruno.payer()
  const nonceBefore = await runnerNonce()
  const broadcastsBefore = broadcasts(chaos).length
  // 4,093 words of data: the call's data is 131,044 bytes (within the 131,072 submit's schema takes), its
  // runner transaction a few hundred bytes more.
  const big = sinkCall(4_093 * 32)
  t.ok((big.data.length - 2) / 2 <= 131_072, `the call's data (${(big.data.length - 2) / 2} bytes) is within the schema's limit`)
  const refusals: string[] = []
  for (const binding of ['mcp', 'rest', 'rpc'] as const) {
    const submitted = await api.submit(binding, { call: big, payment: await bruno.payment(payer.key, 10_000_000n) })
    t.equal(submitted.accepted, false, `${binding}: refused`)
    if (submitted.accepted) continue
    refusals.push(submitted.message)
    t.match(
      submitted.message,
      new RegExp(`^refused: the runner's transaction would be \\d+ bytes, over the ${TX_MAX_SIZE} a node accepts: make the call's data smaller$`),
      `${binding}: ${submitted.message}`,
    )
    const bytes = Number(/would be (\d+) bytes/.exec(submitted.message)![1])
    t.ok(bytes > TX_MAX_SIZE && bytes < TX_MAX_SIZE + 2_048, `${binding}: the size it names, ${bytes} bytes, is the transaction's (call data + ~700 bytes)`)
  }
  t.comment(`figure | oversized refusal: ${refusals[0]}`)
  t.equal(await runnerNonce(), nonceBefore, 'the runner sent nothing')
  t.equal(broadcasts(chaos).length, broadcastsBefore, 'no raw transaction was broadcast')
  t.equal(bruno.proxy.refused.get('eth_sendRawTransaction'), 0, 'the parity proxy had nothing to refuse')

  // Just under the limit: accepted, sent, taken by the parity proxy (geth's pool limit), done.
  const under = sinkCall(4_062 * 32)
  const fits = await mcp.call('submit', { chain: 'local', call: under, payment: await bruno.payment(payer.key, await quoteOf(under)) })
  const done = await settled(fits.id, 'the call just under the limit')
  t.equal(done.stage, 'done', 'the call just under the limit is done')
  const raw = broadcasts(chaos).at(-1)!.raw
  const size = (raw.length - 2) / 2
  t.ok(size <= TX_MAX_SIZE, `its signed transaction, ${size} bytes, is within ${TX_MAX_SIZE}`)
  t.comment(`figure | a ${(under.data.length - 2) / 2}-byte call made a ${size}-byte runner transaction (${size - (under.data.length - 2) / 2} bytes more): accepted and done`)
})

t.test('admission: a deadline past submissionTtlSec, a payment expiring within paymentMarginSec and a 3009 payer with code are refused at submit', async (t) => {
  const payer = await bruno.payer()
  const call = bruno.readCall(payer.address)
  const amount = await quoteOf(call)
  const nonceBefore = await runnerNonce()

  const now = Math.floor(Date.now() / 1000)
  const tooFar = now + relay.submissionTtlSec + 60
  let result = await mcp.callTool('submit', { chain: 'local', call, payment: await bruno.payment(payer.key, amount), deadline: tooFar })
  t.equal(result.isError, true, 'a deadline past now + submissionTtlSec: refused')
  t.match(
    result.content[0].text,
    new RegExp(`^the deadline ${tooFar} is more than ${relay.submissionTtlSec} s away \\(now \\d+\\), longer than this relay holds a submission: give one within ${relay.submissionTtlSec} s, or none$`),
    `it says the limit: ${result.content[0].text}`,
  )

  t.equal(relay.paymentMarginSec, 30)
  t.equal(relay.inclusionSec, 30)
  for (const validForSec of [20, 50]) {
    const validBefore = BigInt(now + validForSec)
    result = await mcp.callTool('submit', { chain: 'local', call, payment: await bruno.payment(payer.key, amount, validBefore) })
    t.equal(result.isError, true, `a payment valid ${validForSec} s more: refused (the margin and the time to be included: 60 s)`)
    t.match(
      result.content[0].text,
      new RegExp(`^the payment expires at ${validBefore} \\(now \\d+\\), too soon to send it safely: it must be valid at least 60 s more; sign a new one$`),
      `it says so: ${result.content[0].text}`,
    )
  }

  // A payer delegated by EIP-7702 to a contract off the Runner's list of wallets (the Runner itself) pays by 3009: the token
  // would run its code (ERC-1271) inside the payment phase. The Runner refuses it, and so does submit.
  const delegated = await bruno.payer()
  await chain.mined(await chain.delegateBy(privateKeyToAccount(delegated.key), bruno.runner))
  t.not(await chain.client.getCode({ address: delegated.address }), undefined, 'the payer has code: a 7702 delegation')
  const delegatedCall = bruno.readCall(delegated.address)
  result = await mcp.callTool('submit', { chain: 'local', call: delegatedCall, payment: await bruno.payment(delegated.key, amount) })
  t.equal(result.isError, true, 'a 3009 payer with code: refused')
  t.match(
    result.content[0].text,
    `refused: the payment's payer (payment.authorization.from) cannot pay by signed transfer: the payer ${delegated.address} has code (a contract, or an account delegated by EIP-7702) that is not on the Runner's list of wallets that may pay by signed transfer: the token would run it inside the payment. A signed EIP-3009 transfer must come from a plain account or a listed wallet; a delegated account pays with a delegate batch (no delegate group is enabled on this server)`,
    `with PayerHasCode's reason, on a server serving only bruno: ${result.content[0].text}`,
  )

  t.equal(await runnerNonce(), nonceBefore, 'nothing was sent for any of them')

  // The limits are limits, not refusals of everything: a deadline right at now + submissionTtlSec is taken.
  const atLimit = await mcp.call('submit', { chain: 'local', call, payment: await bruno.payment(payer.key, amount), deadline: Math.floor(Date.now() / 1000) + relay.submissionTtlSec })
  t.equal((await settled(atLimit.id, 'the submission at the deadline limit')).stage, 'done', 'a deadline at the limit is accepted and done')
})

t.test('duplicates: 20 concurrent submits of one signed payment get one id and make one transaction; REST and JSON-RPC answer that id while it is active, and MCP once it is done', async (t) => {
  const payer = await bruno.payer()
  const call = bruno.readCall(payer.address)
  const payment = await bruno.payment(payer.key, await quoteOf(call))
  const nonceBefore = await runnerNonce()
  const broadcastsBefore = broadcasts(chaos).length
  const id = await byHand(async () => {
    const started = Date.now()
    const answers = await Promise.all(Array.from({ length: 20 }, () => mcp.callTool('submit', { chain: 'local', call, payment })))
    t.comment(`figure | 20 concurrent identical submits answered in ${Date.now() - started} ms`)
    t.same(answers.filter((answer) => answer.isError).map((answer) => answer.content[0].text), [], 'none refused')
    const ids = new Set(answers.map((answer) => answer.structuredContent?.id))
    t.equal(ids.size, 1, `one id for all 20 answers: ${[...ids].join(', ')}`)
    const only = [...ids][0] as string
    // Sent, and not mined: it is active while the other bindings ask.
    const sending = await sentAndPooled(only, 'the submission sent')
    t.equal(sending.transaction.nonce, nonceBefore, 'sent at the runner\'s next nonce')
    for (const binding of ['rest', 'rpc'] as const) {
      const again = await api.submit(binding, { call, payment })
      t.same(again, { accepted: true, id: only }, `${binding}: the same payment answers the same id while it is active`)
    }
    t.equal(broadcasts(chaos).length - broadcastsBefore, 1, 'one raw transaction was broadcast')
    await chain.testClient.mine({ blocks: 1 })
    return only
  })
  const done = await settled(id, 'the deduplicated submission')
  t.equal(done.stage, 'done', 'the deduplicated submission is done')
  t.equal(await runnerNonce(), nonceBefore + 1, 'one runner transaction')
  const carrying = broadcasts(chaos)
    .slice(broadcastsBefore)
    .filter((broadcast) => parseTransaction(broadcast.raw as Hex).data?.includes(payment.authorization.nonce!.slice(2)) === true)
  t.equal(carrying.length, 1, 'one transaction carries the payment')

  // Once it is done, its transfer is spent: the same payment again is answered by the submission that spent it, nothing new.
  const late = await mcp.callTool('submit', { chain: 'local', call, payment })
  t.equal(late.isError, undefined, 'after done, the same payment is not refused')
  t.equal(late.structuredContent?.id, id, 'its submission answers it')
  t.equal(late.structuredContent?.stage, 'done')
  t.equal(broadcasts(chaos).length - broadcastsBefore, 1, 'still one raw transaction')
})

t.test('one transaction in flight per payer: two payments from one account are sent one after the other, both done', async (t) => {
  const payer = await bruno.payer()
  const call = bruno.readCall(payer.address)
  const amount = await quoteOf(call)
  const broadcastsBefore = broadcasts(chaos).length
  const [first, second] = await byHand(async () => {
    const first = await mcp.call('submit', { chain: 'local', call, payment: await bruno.payment(payer.key, amount) })
    const second = await mcp.call('submit', { chain: 'local', call, payment: await bruno.payment(payer.key, amount) })
    t.not(first.id, second.id, 'two payments: two submissions')
    await sentAndPooled(first.id, 'the first sent')
    const behind = await waitFor(() => status(second.id), (view) => view.reason !== undefined, 'the second held')
    t.equal(behind.stage, 'waiting', 'the second waits while the first is in flight')
    t.equal(behind.reason, `waiting: ${payer.address} has a transaction in flight; this one follows it`, 'and says why')
    t.equal(broadcasts(chaos).length - broadcastsBefore, 1, 'one transaction in the pool for the payer')
    await chain.testClient.mine({ blocks: 1 })
    await sentAndPooled(second.id, 'the second sent once the first was in')
    t.equal(broadcasts(chaos).length - broadcastsBefore, 2, 'then the second was broadcast')
    await chain.testClient.mine({ blocks: 1 })
    return [await settled(first.id, 'the first'), await settled(second.id, 'the second')]
  })
  t.equal(first.stage, 'done', 'the first is done')
  t.equal(second.stage, 'done', 'the second is done')
  t.comment(`the second's status once done still says: ${JSON.stringify(second.reason)}`)
  const [firstBlock, secondBlock] = [BigInt(first.transaction.blockNumber), BigInt(second.transaction.blockNumber)]
  t.ok(secondBlock >= firstBlock, `the second's block (${secondBlock}) ≥ the first's (${firstBlock})`)
  t.ok(secondBlock > firstBlock, 'in fact a later block: it was sent only once the first was included')
  t.equal(second.transaction.nonce, first.transaction.nonce + 1, 'consecutive nonces')
})
