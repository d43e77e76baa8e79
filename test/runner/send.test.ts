import t from 'tap'
import { hexToBigInt, type Hex } from 'viem'
import { submitCall } from '../../core/relay/submit.ts'
import { waitFor } from '../fixtures/waitFor.ts'
import { caliburBatchRequest, paymentValue, settledOutcome, signed, startRunnerDevnet } from './runnerDevnet.ts'

// The runner's send path, one pass at a time: which submissions a pass sends, with which nonce and
// fees, what it stores before the broadcast, and how it follows a transaction to `done` through
// the configured confirmations.

t.test('a pass sends each payer\'s first submission at consecutive nonces; the same payer\'s next waits until the first is done', async (t) => {
  const devnet = await startRunnerDevnet(t, { configure: (network) => ({ ...network, runner: { ...network.runner, confirmations: 2 } }) })
  const [first, second] = [await devnet.payer(), await devnet.payer()]
  const a = await devnet.submit(first)
  const b = await devnet.submit(second)
  const c = await devnet.submit(first)
  const nonce = await devnet.client.getTransactionCount({ address: devnet.operator, blockTag: 'pending' })
  const block = await devnet.client.getBlock({ blockTag: 'latest' })
  const tip = hexToBigInt(await devnet.client.request({ method: 'eth_maxPriorityFeePerGas' }) as Hex)

  const passStart = Date.now()
  await devnet.pass()
  const passEnd = Date.now()
  const [sentA, sentB, heldC] = [await devnet.get(a.id), await devnet.get(b.id), await devnet.get(c.id)]
  t.equal(sentA.stage, 'sending', 'the first is sent')
  t.equal(sentB.stage, 'sending', 'so is the other payer\'s')
  t.equal(sentA.transaction!.nonce, nonce, 'the first takes the next nonce')
  t.equal(sentB.transaction!.nonce, nonce + 1, 'the second the one after')
  t.equal(sentA.reason, undefined, 'a sent submission carries no reason')
  for (const sent of [sentA, sentB]) {
    const transaction = sent.transaction!
    const decoded = signed(sent)
    t.same(transaction.hashes, [transaction.hash], 'one hash so far')
    t.ok(passStart <= transaction.firstSentAt && transaction.firstSentAt <= transaction.sentAt && transaction.sentAt <= passEnd, 'first sent in this pass, just before it was stored')
    t.equal(decoded.to?.toLowerCase(), devnet.network.runner.contract.toLowerCase(), 'to the Runner contract')
    t.equal(decoded.nonce, transaction.nonce, 'the signed nonce is the stored one')
    t.equal(decoded.gas, BigInt(transaction.gas), 'the signed gas limit is the stored one')
    t.equal(decoded.chainId, devnet.network.chainId, 'for this chain')
    t.equal(decoded.value ?? 0n, 0n, 'carrying no ETH')
    t.equal(decoded.type, 'eip1559')
    t.equal(decoded.maxPriorityFeePerGas, tip, 'the tip the node asks')
    t.equal(decoded.maxFeePerGas, (block.baseFeePerGas! * 12n) / 10n + tip, 'the max fee: 1.2 x the base fee + the tip')
    t.equal(BigInt(transaction.maxFeePerGas), decoded.maxFeePerGas, 'stored as signed')
    t.equal(BigInt(transaction.maxPriorityFeePerGas), decoded.maxPriorityFeePerGas, 'stored as signed')
    t.ok(BigInt(transaction.callGas) > 0n && BigInt(transaction.callGas) < decoded.gas!, 'the call\'s stipend is stored, within the limit')
    t.ok(await devnet.nodeHas(transaction.hash), 'and the node holds it')
  }
  t.equal(heldC.stage, 'waiting', 'the same payer\'s second is not sent')
  t.equal(heldC.transaction, undefined)
  t.equal(heldC.reason, `waiting: ${first.address} has a transaction in flight; this one follows it`)
  const sentLines = devnet.logged(/^sent$/)
  t.same(sentLines.map((line) => [line.submission, line.nonce, line.hash]), [[a.id, nonce, sentA.transaction!.hash], [b.id, nonce + 1, sentB.transaction!.hash]], 'each send is logged once')
  t.same(sentLines.map((line) => [line.gas, line.callGas]), [sentA, sentB].map((sent) => [sent.transaction!.gas, sent.transaction!.callGas]))

  await devnet.mine()
  await devnet.pass()
  const included = await devnet.get(a.id)
  const receipt = await devnet.client.getTransactionReceipt({ hash: sentA.transaction!.hash })
  t.equal(included.stage, 'confirming', 'included, one confirmation of two')
  t.equal(included.blockNumber, receipt.blockNumber.toString())
  t.equal(included.gasUsed, receipt.gasUsed.toString())
  t.equal(included.fee, (receipt.gasUsed * receipt.effectiveGasPrice).toString(), 'the fee is gas used x the effective price')
  t.same(settledOutcome(t, included.outcome), { paidBaseUnits: paymentValue(a), callSucceeded: true }, 'paid, and the call succeeded')
  t.equal(included.transaction!.hash, sentA.transaction!.hash)
  t.equal((await devnet.get(c.id)).stage, 'waiting', 'the payer\'s next still waits while the first confirms')

  await devnet.mine()
  await devnet.pass()
  t.equal((await devnet.get(a.id)).stage, 'done', 'done at the second confirmation')
  t.equal((await devnet.get(b.id)).stage, 'done')
  t.same((await devnet.get(a.id)).outcome, included.outcome, 'the outcome read at inclusion is kept')

  const sentC = await waitFor(async () => (await devnet.pass(), devnet.get(c.id)), (submission) => submission.stage === 'sending', 'the payer\'s next sent')
  t.equal(sentC.transaction!.nonce, nonce + 2, 'at the next nonce')
  t.equal(sentC.reason, undefined, 'its hold\'s reason is cleared')
  await devnet.mine(2)
  await devnet.pass()
  t.equal((await devnet.get(c.id)).stage, 'done')
  t.equal(await devnet.client.getTransactionCount({ address: devnet.operator }), nonce + 3, 'three transactions, one per submission')
})

t.test('a pass with nothing active reads nothing but the store', async (t) => {
  const devnet = await startRunnerDevnet(t)
  await devnet.pass()
  const before = devnet.chaos.seen.length
  await devnet.pass()
  t.equal(devnet.chaos.seen.length, before, 'no request reached the node')
})

t.test('a transaction in flight is looked for once per block, however many passes run; a failed look is made again the next pass', async (t) => {
  const devnet = await startRunnerDevnet(t)
  const submission = await devnet.submit(await devnet.payer())
  await devnet.pass()
  const hash = (await devnet.get(submission.id)).transaction!.hash
  const looks = () => devnet.chaos.seen.filter((seen) => seen.method === 'eth_getTransactionReceipt' && (seen.params as Hex[])[0] === hash).length
  // Two failures: the read and the client's own retry of it (retryCount 1), so that the runner sees the look fail.
  const failing = devnet.chaos.rule('receipt read fails', (element) => element.method === 'eth_getTransactionReceipt', { error: { code: -32603, message: 'internal error' } }, 2)
  await devnet.pass()
  t.equal(failing.hits, 2, 'the first pass\'s look failed, its retry too')
  t.equal(looks(), 2)
  for (let pass = 0; pass < 3; pass++) await devnet.pass()
  t.equal(looks(), 3, 'three more passes at one block: looked for once more, the next pass after the failed look, then not until a new block')
  await devnet.mine()
  await devnet.pass()
  t.equal(looks(), 4, 'a new block: looked for again')
  t.equal((await devnet.get(submission.id)).stage, 'done', 'and found')
})

t.test('a waiting row an older Bruno stored without its call\'s stipend is measured afresh and sent', async (t) => {
  const devnet = await startRunnerDevnet(t)
  const insert = devnet.store.insert.bind(devnet.store)
  devnet.store.insert = ({ callGas: _, ...submission }) => insert(submission)
  const a = await devnet.submit(await devnet.payer())
  t.equal((await devnet.get(a.id)).callGas, undefined, 'stored without one')
  await devnet.pass()
  const sent = await devnet.get(a.id)
  t.equal(sent.stage, 'sending', 'sent at its first pass')
  t.ok(BigInt(sent.transaction!.callGas) > 0n, 'with a stipend measured for the send')
  await devnet.mine()
  await devnet.pass()
  t.equal((await devnet.get(a.id)).stage, 'done')
  t.same(devnet.logged(/^submission held by a fault$/), [])
})

t.test('a Calibur batch signed with no deadline (0) is sent at its first pass, not failed or cancelled as expiring', async (t) => {
  const devnet = await startRunnerDevnet(t)
  const view = await submitCall(devnet.context, await caliburBatchRequest(devnet, 0n))
  t.equal(view.stage, 'waiting', 'accepted: a batch without a deadline never expires')

  await devnet.pass()
  const sent = await devnet.get(view.id)
  t.equal(sent.stage, 'sending', 'sent at its first pass')
  t.equal(sent.reason, undefined)
  // In flight and not yet mined: no deadline is not one that has come near (core/runner/follow.ts's cancel check).
  await devnet.pass()
  const following = await devnet.get(view.id)
  t.equal(following.stage, 'sending', 'still in flight after a pass that followed it')
  t.equal(following.transaction?.hash, sent.transaction?.hash, 'the same transaction: not cancelled')
  t.same(devnet.logged(/cancelling a transaction/), [], 'no cancellation')
  await devnet.mine()
  await devnet.pass()
  t.equal((await devnet.get(view.id)).stage, 'done')
})
