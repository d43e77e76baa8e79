import t from 'tap'
import { BaseError, parseTransaction, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import type { SubmissionPatch } from '../../core/store/store.ts'
import { waitFor } from '../fixtures/waitFor.ts'
import { broadcasting, broadcasts, type ChaosProxy } from '../liveness/chaosProxy.ts'
import { startRunnerDevnet, type LogLine, type RunnerDevnet } from './runnerDevnet.ts'

// What a pass does when a send does not go through (#dispatch and #broadcast): the node refusing
// the raw transaction (the runner's ETH too low, a nonce too low, any other words), answers that
// are not refusals ("already known", no answer at all), and a fault before the broadcast. Each
// states where the submission ends, its exact reason, what is logged and which nonce comes next.

/** pino's levels. */
const INFO = 30
const WARN = 40
const ERROR = 50

/** The nonces of the raw transactions broadcast through the chaos proxy, in order. */
const broadcastNonces = (chaos: ChaosProxy) => broadcasts(chaos).map((sent) => parseTransaction(sent.raw as Hex).nonce)

/** The runner's nonce as the node counts it, its pool included. */
const pendingNonce = (devnet: RunnerDevnet) => devnet.client.getTransactionCount({ address: devnet.operator, blockTag: 'pending' })

/** A `broadcast not accepted` line's error, as pino serialized the BroadcastError: its own fields. */
const errorOf = (line: LogLine) => {
  const { type, code, reason, endpoint, chain } = line.err as { type: string; code?: number; reason: string; endpoint: string; chain: string }
  return { type, code, reason, endpoint, chain }
}

/** Makes the store's write that reserves a nonce (stage `sending`, before the broadcast) run `before` first, once per entry. */
function beforeReserving(devnet: RunnerDevnet, ...before: (() => Promise<void>)[]) {
  // A first send is stored by `claim`, which reserves its nonce.
  const claim = devnet.store.claim.bind(devnet.store)
  devnet.store.claim = async (id: string, patch: SubmissionPatch, fence) => {
    if (patch.stage === 'sending') await before.shift()?.()
    return claim(id, patch, fence)
  }
}

t.test('the runner\'s ETH too low for the broadcast: held back to waiting, its nonce and its hold given back', async (t) => {
  const devnet = await startRunnerDevnet(t)
  const [first, second] = [await devnet.payer(), await devnet.payer()]
  const submission = await devnet.submit(first)
  const nonce = await pendingNonce(devnet)
  const balance = await devnet.client.getBalance({ address: devnet.operator })
  // Held first by a fault, so that the refusal is seen to drop its hold. Then the simulations run
  // from the operator too: the balance drops after them, just before the broadcast, so that it is
  // the node's pool that refuses the raw transaction.
  beforeReserving(
    devnet,
    async () => {
      throw new Error('the store is busy')
    },
    () => devnet.testClient.setBalance({ address: devnet.operator, value: 0n }),
  )
  await devnet.pass()
  t.equal((await devnet.get(submission.id)).reason, 'waiting: the store is busy', 'held by the fault')
  const heldAt = devnet.logged(/^submission held by a fault$/)[0]!.time as number
  await waitFor(async () => Date.now(), (now) => now > heldAt + 2 * devnet.network.runner.pollMs, 'its hold due')

  await devnet.pass()
  const held = await devnet.get(submission.id)
  t.equal(held.stage, 'waiting', 'back to waiting')
  t.equal(held.reason, 'waiting: the runner\'s ETH balance is too low to send it')
  t.equal(held.transaction, undefined, 'no transaction stored: it holds no nonce')
  t.same(broadcastNonces(devnet.chaos), [nonce], 'it was broadcast once, at the next nonce')
  const refused = devnet.logged(/^broadcast not accepted$/)
  t.same(refused.map((line) => line.level), [INFO], 'the refusal logged once')
  t.match(errorOf(refused[0]!).reason, /insufficient funds/i, 'in the node\'s words')
  t.equal(typeof errorOf(refused[0]!).code, 'number', 'a refusal: the node answered a JSON-RPC error')
  t.equal((refused[0]!.err as { stack?: string }).stack, undefined, 'an expected refusal logs no stack (issue 49, point 8)')
  const unfunded = devnet.logged(/^the runner cannot pay for gas: fund it$/)
  t.same(unfunded.map((line) => [line.level, line.submission]), [[ERROR, submission.id]], 'the operator is told to fund it, once')
  t.same(devnet.logged(/^sent$/), [], 'nothing logged as sent')

  // Funded again. A newer submission arrives; the refused one goes first, as one never held (a
  // held one due again would go after it), and at the nonce it was refused at.
  await devnet.testClient.setBalance({ address: devnet.operator, value: balance })
  const newer = await devnet.submit(second)
  await devnet.pass()
  const [sent, sentNewer] = [await devnet.get(submission.id), await devnet.get(newer.id)]
  t.equal(sent.stage, 'sending', 'the next pass sends it')
  t.equal(sent.transaction!.nonce, nonce, 'at the nonce it was refused at: the nonce was given back')
  t.equal(sent.reason, undefined, 'its reason cleared')
  t.equal(sentNewer.transaction!.nonce, nonce + 1, 'the newer one after it')
  t.same(broadcastNonces(devnet.chaos), [nonce, nonce, nonce + 1])
  t.ok(await devnet.nodeHas(sent.transaction!.hash), 'the node holds it')
  t.same(devnet.logged(/^sent$/).map((line) => [line.submission, line.nonce]), [[submission.id, nonce], [newer.id, nonce + 1]])
})

t.test('a nonce the node finds too low holds the submission; the next pass reads the nonce afresh', async (t) => {
  const devnet = await startRunnerDevnet(t)
  // The test's own self-transfer below counts as a runner transaction that looks like a cancellation.
  devnet.allow(0, 1)
  const [first, second] = [await devnet.payer(), await devnet.payer()]
  const a = await devnet.submit(first)
  await devnet.pass()
  const nonce = (await devnet.get(a.id)).transaction!.nonce
  // The runner now counts nonce + 1 as its next; the key sends at it behind its back, and both are mined.
  const operator = privateKeyToAccount(devnet.operatorKey)
  const fees = { maxFeePerGas: 10n ** 11n, maxPriorityFeePerGas: 10n ** 9n }
  const raw = await operator.signTransaction({ chainId: devnet.network.chainId, to: operator.address, value: 0n, gas: 21_000n, nonce: nonce + 1, ...fees, type: 'eip1559' })
  await devnet.client.request({ method: 'eth_sendRawTransaction', params: [raw] })
  await devnet.mine()
  t.equal(await pendingNonce(devnet), nonce + 2, 'both mined')

  const b = await devnet.submit(second)
  const reads = () => devnet.chaos.seen.filter((seen) => seen.method === 'eth_getTransactionCount').length
  const readsBefore = reads()
  await devnet.pass()
  t.equal(reads(), readsBefore, 'the pass took its cached nonce, without asking the node')
  const held = await devnet.get(b.id)
  t.same(broadcastNonces(devnet.chaos), [nonce, nonce + 1], 'it was broadcast at the cached nonce')
  t.equal(held.stage, 'waiting', 'held, not failed')
  t.equal(held.transaction, undefined, 'no transaction stored')
  const words = /^waiting: the node refused the nonce \((.+)\); sent again with a fresh one$/.exec(held.reason ?? '')?.[1]
  t.match(words, /nonce too low/i, 'the node\'s words, inside the reason')
  const refused = devnet.logged(/^broadcast not accepted$/)
  t.same(refused.map((line) => [line.level, errorOf(line).reason]), [[INFO, words]], 'the refusal logged once, in the words the reason quotes')
  t.same(devnet.logged(/^the runner cannot pay for gas: fund it$/), [], 'not taken for a want of ETH')
  t.equal((await devnet.get(a.id)).stage, 'done', 'the first was followed in the same pass')

  await devnet.pass()
  t.equal(reads(), readsBefore + 1, 'the next pass asks the node for the nonce')
  const sent = await devnet.get(b.id)
  t.equal(sent.stage, 'sending')
  t.equal(sent.transaction!.nonce, nonce + 2, 'sent at the fresh nonce')
  t.equal(sent.reason, undefined, 'its reason cleared')
  t.ok(await devnet.nodeHas(sent.transaction!.hash), 'the node holds it')
  await devnet.mine()
  await devnet.pass()
  t.equal((await devnet.get(b.id)).stage, 'done', 'and it is included')
})

t.test('three payers in one pass, the first\'s nonce found too low: the other two are not sent with a nonce the runner no longer has (issue 28, point 7)', async (t) => {
  const devnet = await startRunnerDevnet(t)
  devnet.allow(0, 1)
  const payers = [await devnet.payer(), await devnet.payer(), await devnet.payer(), await devnet.payer()]
  const a = await devnet.submit(payers[0]!)
  await devnet.pass()
  const nonce = (await devnet.get(a.id)).transaction!.nonce
  // The key sends at the runner's next nonce behind its back (bruno sweep while it runs, say), and it is mined.
  const operator = privateKeyToAccount(devnet.operatorKey)
  const raw = await operator.signTransaction({ chainId: devnet.network.chainId, to: operator.address, value: 0n, gas: 21_000n, nonce: nonce + 1, maxFeePerGas: 10n ** 11n, maxPriorityFeePerGas: 10n ** 9n, type: 'eip1559' })
  await devnet.client.request({ method: 'eth_sendRawTransaction', params: [raw] })
  await devnet.mine()
  const three = [await devnet.submit(payers[1]!), await devnet.submit(payers[2]!), await devnet.submit(payers[3]!)]
  const before = broadcasts(devnet.chaos).length
  await devnet.pass()
  t.same(broadcastNonces(devnet.chaos).slice(before), [nonce + 1], 'one broadcast, refused: the other two wait for the next pass')
  const views = await Promise.all(three.map((submission) => devnet.get(submission.id)))
  t.match(views[0]!.reason, /^waiting: the node refused the nonce \(.*nonce too low.*\); sent again with a fresh one$/i)
  for (const view of views.slice(1)) {
    t.equal(view.stage, 'waiting')
    t.equal(view.transaction, undefined, 'nothing signed for it')
    t.equal(view.reason, undefined, 'and no false reason')
  }
  await devnet.pass()
  t.same(broadcastNonces(devnet.chaos).slice(before + 1), [nonce + 2, nonce + 3, nonce + 4], 'the next pass: all three, at the fresh nonces, in order')
  await devnet.mine()
  await devnet.pass()
  for (const submission of three) t.equal((await devnet.get(submission.id)).stage, 'done')
})

t.test('any other refusal fails the submission; the nonce it did not use goes to the next one', async (t) => {
  const devnet = await startRunnerDevnet(t)
  const payer = await devnet.payer()
  const a = await devnet.submit(payer)
  const b = await devnet.submit(payer)
  const nonce = await pendingNonce(devnet)
  devnet.chaos.rule('refuse', broadcasting, { error: { code: -32000, message: 'exceeds block gas limit' } }, 1)

  await devnet.pass()
  const failed = await devnet.get(a.id)
  t.equal(failed.stage, 'failed')
  t.equal(failed.reason, 'the node refused the transaction: exceeds block gas limit')
  t.equal(failed.transaction, undefined, 'its transaction cleared: it holds no nonce')
  t.equal(failed.fault, undefined, 'not counted against the payer')
  const refused = devnet.logged(/^broadcast not accepted$/)
  t.same(
    refused.map((line) => ({ level: line.level, component: line.component, ...errorOf(line) })),
    [{ level: INFO, component: 'runner', type: 'BroadcastError', code: -32000, reason: 'exceeds block gas limit', endpoint: 'RPC', chain: devnet.network.name }],
    'the refusal is logged once, with the node\'s code and words',
  )
  // The same payer's next is not held behind the refused one: that one is not in flight.
  const sent = await devnet.get(b.id)
  t.equal(sent.stage, 'sending', 'the next submission is sent in the same pass')
  t.equal(sent.transaction!.nonce, nonce, 'at the nonce the refused one did not use')
  t.same(broadcasts(devnet.chaos).map((one) => [parseTransaction(one.raw as Hex).nonce, one.refusedBy]), [[nonce, 'refuse'], [nonce, undefined]])
  t.same(devnet.logged(/^sent$/).map((line) => [line.submission, line.nonce]), [[b.id, nonce]], 'only the taken one is logged as sent')
  await devnet.mine()
  await devnet.pass()
  t.equal((await devnet.get(b.id)).stage, 'done', 'no gap: it is included')
})

t.test('a refusal in no words is a refusal: the submission fails and its nonce goes to the next one', async (t) => {
  const devnet = await startRunnerDevnet(t)
  const payer = await devnet.payer()
  const a = await devnet.submit(payer)
  const b = await devnet.submit(payer)
  const nonce = await pendingNonce(devnet)
  devnet.chaos.rule('refuse silently', broadcasting, { error: { code: -32000, message: '' } }, 1)
  await devnet.pass()
  const failed = await devnet.get(a.id)
  t.equal(failed.stage, 'failed', 'not taken for sent')
  t.equal(failed.reason, 'the node refused the transaction: error -32000 with no message')
  t.equal(failed.transaction, undefined)
  const sent = await devnet.get(b.id)
  t.equal(sent.transaction!.nonce, nonce, 'the next one takes the nonce')
  await devnet.mine()
  await devnet.pass()
  t.equal((await devnet.get(b.id)).stage, 'done')
})

t.test('answers that are not refusals: "already known" and no answer at all are the transaction taken', async (t) => {
  // A short RPC timeout (the schema's floor is 100 ms), and a node that answers one broadcast after it.
  const rpcTimeoutMs = 300
  const devnet = await startRunnerDevnet(t, { configure: (network) => ({ ...network, rpcTimeoutMs }) })
  const payers = [await devnet.payer(), await devnet.payer(), await devnet.payer()]
  const submitted = []
  for (const payer of payers) submitted.push(await devnet.submit(payer))
  const nonce = await pendingNonce(devnet)
  // Newest rule first: the first broadcast is answered "Already known", the second geth's other
  // words; the third goes unanswered (viem never tries a broadcast again, so once is enough).
  devnet.chaos.rule('silent', broadcasting, { error: { code: -32000, message: 'never answered' } }, 1, rpcTimeoutMs * 4)
  devnet.chaos.rule('known transaction', broadcasting, { error: { code: -32000, message: 'known transaction: 0x1234' } }, 1)
  devnet.chaos.rule('already known', broadcasting, { error: { code: -32000, message: 'Already known' } }, 1)

  await devnet.pass()
  const sent = await Promise.all(submitted.map((submission) => devnet.get(submission.id)))
  t.same(sent.map((one) => one.stage), ['sending', 'sending', 'sending'], 'all three stay sending: the node may hold them')
  t.same(sent.map((one) => one.reason), [undefined, undefined, undefined], 'with no reason')
  t.same(sent.map((one) => one.transaction!.nonce), [nonce, nonce + 1, nonce + 2], 'each kept its nonce: the next one advanced')
  t.same(
    broadcasts(devnet.chaos),
    sent.map((one, index) => ({ raw: one.transaction!.raw, refusedBy: ['already known', 'known transaction', 'silent'][index] })),
    'the stored bytes were the ones broadcast, once each',
  )
  t.same(
    devnet.logged(/^broadcast not accepted$/).map((line) => [line.level, errorOf(line).code, errorOf(line).reason]),
    [[INFO, -32000, 'Already known'], [INFO, -32000, 'known transaction: 0x1234'], [INFO, undefined, 'the RPC request timed out']],
    'each logged, the unanswered one with no code',
  )
  t.same(devnet.logged(/^sent$/).map((line) => [line.submission, line.nonce]), submitted.map((submission, index) => [submission.id, nonce + index]), 'all logged as sent')
})

t.test('a fault while storing the transaction holds the submission with its short reason; the nonce is not taken', async (t) => {
  const devnet = await startRunnerDevnet(t)
  const payer = await devnet.payer()
  const a = await devnet.submit(payer)
  const b = await devnet.submit(payer)
  const nonce = await pendingNonce(devnet)
  // A plain error: its first line, with the URL struck out, cut at 300 characters.
  const long = `disk I/O error at file:///var/lib/bruno/bruno.sqlite?mode=rw ${'x'.repeat(400)}\nat the second line`
  const plain = `waiting: ${`disk I/O error at [url] ${'x'.repeat(400)}`.slice(0, 300)}`
  beforeReserving(
    devnet,
    async () => {
      throw new Error(long)
    },
    // A viem error: the node's own words (its details), not its summary.
    async () => {
      throw new BaseError('a summary', { details: 'the details of it\nand more' })
    },
  )
  const faults = () => devnet.logged(/^submission held by a fault$/)

  // Both sends fault, the same payer's second too: the first was not sent.
  await devnet.pass()
  const [heldA, heldB] = [await devnet.get(a.id), await devnet.get(b.id)]
  t.same([heldA.stage, heldB.stage], ['waiting', 'waiting'], 'both held')
  t.equal(heldA.reason, plain)
  t.equal(heldB.reason, 'waiting: the details of it')
  t.same([heldA.transaction, heldB.transaction], [undefined, undefined], 'no transaction stored')
  t.same(broadcasts(devnet.chaos), [], 'nothing broadcast')
  t.same(devnet.logged(/^runner pass failed$/), [], 'the pass itself did not fail')
  const errors = faults().map((line) => line.err as { type: string; message: string; details?: string })
  t.same(faults().map((line) => [line.level, line.submission]), [[WARN, a.id], [WARN, b.id]], 'each fault logged, at warn')
  t.same(errors.map((error) => [error.type, error.type === 'Error' ? error.message : error.details]), [['Error', long], ['BaseError', 'the details of it\nand more']], 'with the error whole')

  // Once both holds' backoff has passed, one pass looks at both: the first is sent, at the nonce
  // the faulted tries did not take, and the same payer's second then waits behind it.
  const lastHeldAt = faults()[1]!.time as number
  await waitFor(async () => Date.now(), (now) => now > lastHeldAt + 2 * devnet.network.runner.pollMs, 'both holds due')
  await devnet.pass()
  const [sentA, waitingB] = [await devnet.get(a.id), await devnet.get(b.id)]
  t.equal(sentA.stage, 'sending')
  t.equal(sentA.transaction!.nonce, nonce, 'at the next nonce: none was taken')
  t.equal(sentA.reason, undefined, 'its reason cleared')
  t.same(broadcastNonces(devnet.chaos), [nonce])
  t.ok(await devnet.nodeHas(sentA.transaction!.hash))
  t.equal(waitingB.stage, 'waiting')
  t.equal(waitingB.transaction, undefined)
  t.equal(waitingB.reason, `waiting: ${payer.address} has a transaction in flight; this one follows it`)
  t.equal(faults().length, 2, 'no fault since')
})
