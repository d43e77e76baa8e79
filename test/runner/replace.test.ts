import t from 'tap'
import { keccak256, type Address } from 'viem'
import type { NetworkConfig } from '../../config/schema.ts'
import { quoteCall } from '../../core/relay/quote.ts'
import { waitFor } from '../fixtures/waitFor.ts'
import { answerTip, currentFees, feeBump, settledOutcome, signed, startRunnerDevnet, type RunnerDevnet } from './runnerDevnet.ts'

// The runner's stuck path, one pass at a time: a relay left unincluded past `runner.stuckAfterMs`
// is replaced at its nonce with the same transaction at raised fees (exactly the bump of its own, or
// the node's current fees where higher), the receipt of whichever of its hashes is mined settles it,
// and a replacement is not sent where the payment would not cover it or the relay would no longer
// succeed. The node's tip is raised for the runner alone by a chaos rule (anvil's stays at 1 gwei).

/**
 * Below the schema's 1 s minimum (`configure` changes the config after it is parsed): short enough to
 * wait out, long enough that a pass right after a send comes before it.
 */
const STUCK_AFTER_MS = 400

const stuckSoon = { configure: (network: NetworkConfig) => ({ ...network, runner: { ...network.runner, stuckAfterMs: STUCK_AFTER_MS } }) }

/** Passes until the submission's transaction carries `count` hashes. */
const passUntilHashes = (devnet: RunnerDevnet, id: string, count: number) =>
  waitFor(async () => (await devnet.pass(), devnet.get(id)), (submission) => submission.transaction!.hashes.length === count, `${count} hashes`, 5_000)

/** The JSON-RPC methods the runner sent since `from` (an index into the chaos proxy's log). */
const methodsSince = (devnet: RunnerDevnet, from: number) => devnet.chaos.seen.slice(from).map((seen) => seen.method)

t.test('a relay stuck past stuckAfterMs is replaced at its nonce with raised fees, again when stuck again, and is done with the hash mined', async (t) => {
  const devnet = await startRunnerDevnet(t, stuckSoon)
  const payer = await devnet.payer()
  const call = devnet.readCall(payer.address)
  const quoted = BigInt((await quoteCall(devnet.context, { call, token: 'USDC', payment: 'authorization' })).amountBaseUnits)
  // Paid three times the quote: the second replacement's fees (a 2-gwei tip) stay covered.
  const submission = await devnet.submit(payer, { call, amount: 3n * quoted })
  await devnet.pass()
  const sent = await devnet.get(submission.id)
  const stuck = sent.transaction!
  t.equal(sent.stage, 'sending')

  // Right after the send, a pass only asks for the receipt: nothing is stuck yet.
  const seen = devnet.chaos.seen.length
  await devnet.pass()
  t.ok(Date.now() - stuck.sentAt < STUCK_AFTER_MS, 'that pass came before stuckAfterMs (else the machine is too slow for this test)')
  t.same(methodsSince(devnet, seen), ['eth_blockNumber', 'eth_getTransactionReceipt'], 'the latest block and one receipt read, and no fee, price or L1-fee read')
  t.same(await devnet.get(submission.id), sent, 'nothing stored')
  t.same(devnet.logged(/^replaced a stuck transaction$/), [], 'nothing replaced')

  const current = await currentFees(devnet)
  const replacedOnce = await passUntilHashes(devnet, submission.id, 2)
  const first = replacedOnce.transaction!
  const firstSigned = signed(replacedOnce)
  // No block since the send: the node's fees are the stuck one's, so the bump is the higher.
  t.ok(feeBump(devnet, stuck.maxPriorityFeePerGas) > current.maxPriorityFeePerGas && feeBump(devnet, stuck.maxFeePerGas) > current.maxFeePerGas, 'the bumped fees are above the current ones')
  t.equal(first.maxPriorityFeePerGas, feeBump(devnet, stuck.maxPriorityFeePerGas).toString(), 'the tip: the stuck one\'s × (10000 + feeBumpBps) / 10000')
  t.equal(first.maxFeePerGas, feeBump(devnet, stuck.maxFeePerGas).toString(), 'the max fee: the stuck one\'s, bumped')
  t.equal(firstSigned.maxPriorityFeePerGas, BigInt(first.maxPriorityFeePerGas), 'signed as stored')
  t.equal(firstSigned.maxFeePerGas, BigInt(first.maxFeePerGas), 'signed as stored')
  t.equal(first.nonce, stuck.nonce, 'at the stuck one\'s nonce')
  t.equal(firstSigned.nonce, stuck.nonce)
  t.equal(first.callGas, stuck.callGas, 'the same stipend')
  t.equal(firstSigned.data, signed(sent).data, 'the same relay, byte for byte: only the fees change')
  t.equal(first.gas, stuck.gas, 'the same gas limit')
  t.equal(firstSigned.gas, BigInt(stuck.gas))
  t.equal(firstSigned.to, signed(sent).to)
  t.equal(first.hash, keccak256(first.raw))
  t.not(first.hash, stuck.hash)
  t.same(first.hashes, [stuck.hash, first.hash], 'both hashes kept, oldest first')
  t.equal(first.firstSentAt, stuck.firstSentAt, 'first sent when the stuck one was: maxSendingMs counts from it')
  t.ok(first.sentAt - stuck.sentAt > STUCK_AFTER_MS, `sent again only once stuck for over ${STUCK_AFTER_MS} ms`)
  t.equal(first.cancel, undefined, 'a relay, not a cancellation')
  t.equal(replacedOnce.stage, 'sending')
  t.equal(replacedOnce.reason, undefined)
  t.equal(await devnet.nodeHas(first.hash), true, 'the node holds the replacement')
  t.equal(await devnet.nodeHas(stuck.hash), false, 'anvil dropped the stuck one from its pool for it')
  const lines = devnet.logged(/^replaced a stuck transaction$/)
  t.equal(lines.length, 1, 'logged once')
  t.same([lines[0]!.level, lines[0]!.submission, lines[0]!.hash, lines[0]!.replaces, lines[0]!.nonce], [30, submission.id, first.hash, stuck.hash, stuck.nonce], 'at info, with the submission, both hashes and the nonce')

  // Stuck again, while the node asks a tip above the bump: the node's fees are the higher now.
  const tip = 2_000_000_000n
  const rule = answerTip(devnet, tip)
  const raised = await currentFees(devnet, tip)
  const replacedTwice = await passUntilHashes(devnet, submission.id, 3)
  devnet.chaos.remove(rule)
  const second = replacedTwice.transaction!
  t.ok(raised.maxPriorityFeePerGas > feeBump(devnet, first.maxPriorityFeePerGas) && raised.maxFeePerGas > feeBump(devnet, first.maxFeePerGas), 'the current fees are above the bumped ones')
  t.equal(second.maxPriorityFeePerGas, tip.toString(), 'the tip: the node\'s')
  t.equal(second.maxFeePerGas, raised.maxFeePerGas.toString(), 'the max fee: the latest base fee × 1.2 + the node\'s tip')
  t.equal(signed(replacedTwice).maxFeePerGas, raised.maxFeePerGas)
  t.equal(second.nonce, stuck.nonce)
  t.equal(second.callGas, stuck.callGas)
  t.same(second.hashes, [stuck.hash, first.hash, second.hash], 'three hashes now')
  t.equal(second.firstSentAt, stuck.firstSentAt)
  t.ok(second.sentAt - first.sentAt > STUCK_AFTER_MS, 'stuck again for over stuckAfterMs')
  t.same(devnet.logged(/^replaced a stuck transaction$/).map((line) => [line.hash, line.replaces]), [[first.hash, stuck.hash], [second.hash, first.hash]], 'each replacement logged, with the one it replaces')

  await devnet.mine()
  await devnet.pass()
  const done = await devnet.get(submission.id)
  const receipt = await devnet.client.getTransactionReceipt({ hash: second.hash })
  t.equal(done.stage, 'done', 'included: done at the one confirmation configured')
  t.equal(done.transaction!.hash, second.hash, 'with the replacement\'s hash')
  t.same(done.transaction!.hashes, second.hashes, 'all its hashes kept')
  t.equal(done.blockNumber, receipt.blockNumber.toString())
  t.equal(done.fee, (receipt.gasUsed * receipt.effectiveGasPrice).toString())
  t.same(settledOutcome(t, done.outcome), { paidBaseUnits: (3n * quoted).toString(), callSucceeded: true })
})

t.test('where an earlier hash of the nonce is mined, the stored hash becomes the receipt\'s', async (t) => {
  const devnet = await startRunnerDevnet(t, stuckSoon)
  const submission = await devnet.submit(await devnet.payer())
  await devnet.pass()
  const stuck = (await devnet.get(submission.id)).transaction!
  const replacement = (await passUntilHashes(devnet, submission.id, 2)).transaction!
  // The node loses the replacement and is handed the stuck one's bytes again (another node's pool did).
  await devnet.testClient.dropTransaction({ hash: replacement.hash })
  await devnet.client.sendRawTransaction({ serializedTransaction: stuck.raw })
  t.equal(await devnet.nodeHas(replacement.hash), false, 'the replacement is gone')
  t.equal(await devnet.nodeHas(stuck.hash), true, 'the stuck one pends again')

  await devnet.mine()
  await devnet.pass()
  const done = await devnet.get(submission.id)
  const receipt = await devnet.client.getTransactionReceipt({ hash: stuck.hash })
  t.equal(receipt.status, 'success')
  t.equal(done.stage, 'done')
  t.equal(done.transaction!.hash, stuck.hash, 'the hash mined, not the latest sent')
  t.same(done.transaction!.hashes, [stuck.hash, replacement.hash], 'the hashes sent are kept')
  t.equal(done.transaction!.nonce, stuck.nonce)
  t.equal(done.transaction!.firstSentAt, stuck.firstSentAt)
  t.equal(done.blockNumber, receipt.blockNumber.toString())
  t.equal(done.fee, (receipt.gasUsed * receipt.effectiveGasPrice).toString(), 'the fee the mined one paid')
})

t.test('a stuck relay is not replaced where the payment does not cover the raised fees, nor where it would no longer succeed', async (t) => {
  const devnet = await startRunnerDevnet(t, stuckSoon)
  // A call that succeeds until the test swaps the code at its target for one that reverts.
  const target: Address = '0x000000000000000000000000000000000000c0de'
  await devnet.testClient.setCode({ address: target, bytecode: '0x00' })
  const [poor, failing] = [await devnet.payer(), await devnet.payer()]
  const covered = await devnet.submit(poor)
  const later = await devnet.submit(failing, { call: { to: target, data: '0x' } })
  await devnet.pass()
  const [sentCovered, sentLater] = await Promise.all([devnet.get(covered.id), devnet.get(later.id)])
  t.same([sentCovered.stage, sentLater.stage], ['sending', 'sending'])

  // PUSH0 PUSH0 REVERT: the call now fails; and the node asks a tip the first payment cannot cover.
  await devnet.testClient.setCode({ address: target, bytecode: '0x5f5ffd' })
  const tip = 100_000_000_000n
  answerTip(devnet, tip)
  const raised = await currentFees(devnet, tip)
  // Both stuck before the pass that looks at them (the later was sent a few ms after the first).
  const lastSentAt = Math.max(sentCovered.transaction!.sentAt, sentLater.transaction!.sentAt)
  await waitFor(async () => Date.now(), (now) => now - lastSentAt > STUCK_AFTER_MS, 'both stuck', 5_000, 10)
  const seen = devnet.chaos.seen.length
  await devnet.pass()
  t.equal(methodsSince(devnet, seen).includes('eth_sendRawTransaction'), false, 'nothing was broadcast')

  const uncovered = devnet.logged(/^stuck transaction not replaced: the payment does not cover the raised fees$/)
  const expectedMax = raised.maxFeePerGas > feeBump(devnet, sentCovered.transaction!.maxFeePerGas) ? raised.maxFeePerGas : 0n
  t.ok(expectedMax > 0n, 'the node\'s max fee is above the bumped one')
  t.same(uncovered.map((line) => [line.level, line.submission, line.worstCaseWei]), [[40, covered.id, (BigInt(sentCovered.transaction!.gas) * expectedMax).toString()]], 'warned once, with the worst case: gas × the raised max fee')
  const heldCovered = await devnet.get(covered.id)
  t.equal(heldCovered.reason, 'replacement held: the payment does not cover the fee the node requires to replace it')
  t.same(heldCovered.transaction, sentCovered.transaction, 'the stuck transaction stays as it was')
  t.equal(heldCovered.stage, 'sending')
  t.equal(await devnet.nodeHas(sentCovered.transaction!.hash), true, 'and the node still holds it')

  const stipend = BigInt(sentLater.transaction!.callGas)
  const noLonger = devnet.logged(/^stuck transaction not replaced: it would no longer succeed$/)
  t.same(noLonger.map((line) => [line.level, line.submission]), [[40, later.id]], 'warned once for the failing one')
  // Re-simulated with the stuck one's stipend (raised twice by half, never re-measured with the probe).
  const tried = (((stipend * 3n) / 2n) * 3n) / 2n
  t.equal(String(noLonger[0]!.reason).split('. ')[0], `waiting: the call fails in simulation with a ${tried}-gas stipend at the fees it would be sent with`, 'with the simulation\'s reason')
  t.same(await devnet.get(later.id), sentLater, 'nothing stored for it')

  // The next pass looks again and warns again, but the reason is written once.
  await devnet.pass()
  t.equal(devnet.logged(/^stuck transaction not replaced: the payment does not cover the raised fees$/).length, 2, 'warned again')
  t.equal(devnet.logged(/^stuck transaction not replaced: it would no longer succeed$/).length, 2)
  t.same(await devnet.get(covered.id), heldCovered, 'the reason is not written again (updatedAt unchanged)')
  t.same(await devnet.get(later.id), sentLater)
  t.equal(methodsSince(devnet, seen).includes('eth_sendRawTransaction'), false, 'still nothing broadcast')

  // A fault of the chain while re-pricing is no verdict on the relay: the pass logs it and retries.
  const fault = devnet.chaos.rule('no block', (element) => element.method === 'eth_getBlockByNumber', { error: { code: -32000, message: 'header not found' } })
  await devnet.pass()
  devnet.chaos.remove(fault)
  t.equal(fault.hits > 0, true, 'the fees could not be read')
  t.equal(devnet.logged(/^stuck transaction not replaced/).length, 4, 'neither taken for a relay that would fail or is not covered')
  t.same(devnet.logged(/^following a transaction failed; retried next pass$/).map((line) => line.submission).sort(), [covered.id, later.id].sort(), 'each logged as a failed follow')
  t.same(await devnet.get(covered.id), heldCovered, 'nothing stored')
})
