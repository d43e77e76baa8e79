import t from 'tap'
import { createWalletClient, erc20Abi, http, parseEther, type Address, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { devnetChain } from '../../core/devnet/chain.ts'
import type { Submission } from '../../core/store/store.ts'
import { waitFor } from '../fixtures/waitFor.ts'
import { simulating, type Seen } from '../liveness/chaosProxy.ts'
import { lowerFees, raiseFees, signed, startRunnerDevnet, type RunnerDevnet } from './runnerDevnet.ts'

// The runner's holds, one pass at a time: what a pass does with a waiting submission it does not
// send (a payer with a transaction in flight, a payment that no longer covers the worst case),
// how a held one backs off, when it fails instead (past its deadline, counted against the payer
// only after a failing hold by the payer's doing; its payment within `relay.paymentMarginSec` of
// expiring), and how many held ones a pass re-checks (8 a pass, 4 at once). Deadlines are whole
// unix seconds, so those tests wait for the clock's next second (no passes meanwhile). A
// submission's simulations are told apart by its payment's nonce, which its Runner call carries.
// holds-failing.test.ts has the holds that end after `relay.failingHoldSec`.

/** The unix second of `ms`, as the runner compares deadlines. */
const second = (ms: number) => Math.floor(ms / 1000)

/** Waits, without passes, until the clock reaches unix second `at`. */
const clockAt = (at: number) => waitFor(async () => Date.now(), (now) => second(now) >= at, `second ${at}`, 5_000, 5)

/** Waits, without passes, for the first half of a second: what follows gets in before the next. */
const earlyInASecond = () => waitFor(async () => Date.now(), (now) => now % 1000 < 500, 'early in a second', 5_000, 5)

/** A signed transfer's nonce: it is in its Runner call's data, so it marks that submission's simulations. */
function nonceOf({ request: { payment } }: Submission): string {
  if (!('authorization' in payment)) throw new Error('not a signed transfer')
  return payment.authorization.nonce
}

/** The simulations (eth_call, eth_estimateGas) of `submission`'s Runner transaction among `seen`. */
const simulationsOf = (seen: readonly Seen[], submission: Submission) => seen.filter(simulating(nonceOf(submission)))

/** One pass, timed, with every request it made. */
async function timedPass(devnet: RunnerDevnet): Promise<{ start: number; end: number; seen: Seen[] }> {
  const from = devnet.chaos.seen.length
  const start = Date.now()
  await devnet.pass()
  return { start, end: Date.now(), seen: devnet.chaos.seen.slice(from) }
}

/** The in-flight hold's reason. */
const followsReason = (payer: string) => `waiting: ${payer} has a transaction in flight; this one follows it`

/** Moves all of `payer`'s USDC to the payee (given ETH for the gas; mined by the next block): its signed payment now reverts. */
async function spendAll(devnet: RunnerDevnet, payer: { key: Hex; address: Address }): Promise<void> {
  await devnet.testClient.setBalance({ address: payer.address, value: parseEther('1') })
  const wallet = createWalletClient({ account: privateKeyToAccount(payer.key), chain: devnetChain(devnet.deployment.chainId), transport: http(devnet.anvil.rpcUrl) })
  const balance = await devnet.client.readContract({ address: devnet.deployment.usdc, abi: erc20Abi, functionName: 'balanceOf', args: [payer.address] })
  await wallet.writeContract({ address: devnet.deployment.usdc, abi: erc20Abi, functionName: 'transfer', args: [devnet.payee, balance] })
}

/** The relay's refusal of a payment whose payer no longer holds the amount: the shortfall, named. */
const PAYMENT_FAILS = /^waiting: the payer 0x[0-9a-fA-F]{40} holds (?:[0-9.]+ USDC, less than the [0-9.]+ USDC|no USDC, which) its payment transfers \(payment\.authorization\.value\): fund it with USDC, or pay in another token$/

const coverReason = (worstCaseWei: bigint) => `waiting: the payment no longer covers the most the runner could pay at current fees (${worstCaseWei} wei)`
const COVER_REASON = /^waiting: the payment no longer covers the most the runner could pay at current fees \((\d+) wei\)$/

t.test('a waiting submission fails past its deadline, or once its payment is within paymentMarginSec of expiring: with its held reason, never before', async (t) => {
  const margin = 2
  const devnet = await startRunnerDevnet(t, { configure: (network) => ({ ...network, relay: { ...network.relay, paymentMarginSec: margin } }) })
  const [busy, free] = [await devnet.payer(), await devnet.payer()]
  // The busy payer's first is sent and stays unmined (automine is off): its later ones are held.
  const first = await devnet.submit(busy)
  await devnet.pass()
  t.equal((await devnet.get(first.id)).stage, 'sending')

  // So that the submissions below are in before their deadline.
  await earlyInASecond()
  // Never looked at until past their deadline: failed with no held reason to give.
  const lateDeadline = second(Date.now()) + 1
  const [late, lateFree] = await Promise.all([devnet.submit(busy, { deadline: lateDeadline }), devnet.submit(free, { deadline: lateDeadline })])
  // The boundary second: the first pass falls in it.
  const boundary = Math.max(late.deadline, lateFree.deadline) + 1
  const validBefore = BigInt(boundary + margin)
  const [atDeadline, atMargin, expiring] = await Promise.all([
    // Its deadline is the boundary second: not yet past it there.
    devnet.submit(busy, { deadline: boundary }),
    // At the boundary its payment runs exactly `margin` more seconds: not yet within it.
    devnet.submit(busy, { validBefore }),
    // Within the margin at the boundary, never looked at before: failed with no held reason.
    devnet.submit(free, { validBefore: validBefore - 1n }),
  ])

  await clockAt(boundary)
  const onBoundary = await timedPass(devnet)
  t.equal(second(onBoundary.end), boundary, 'the pass ran within the boundary second')
  for (const held of [atDeadline, atMargin]) {
    const stored = await devnet.get(held.id)
    t.equal(stored.stage, 'waiting', 'at its deadline, or exactly its margin from its payment\'s expiry, it is still held')
    t.equal(stored.reason, followsReason(busy.address))
    t.equal(stored.transaction, undefined)
  }
  // Its simulation at latest would not see the payer's transaction in flight: it is not run at all.
  t.same([atDeadline, atMargin].flatMap((held) => simulationsOf(onBoundary.seen, held)), [], 'a payer in flight: its later ones are not simulated')
  for (const missed of [late, lateFree]) {
    const stored = await devnet.get(missed.id)
    t.equal(stored.stage, 'failed', 'past its deadline at its first look')
    t.equal(stored.reason, 'not sent before its deadline', 'no held reason to add')
    t.equal(stored.fault, undefined, 'not the payer\'s doing')
    t.equal(stored.transaction, undefined)
  }
  const expired = await devnet.get(expiring.id)
  t.equal(expired.stage, 'failed', 'its payment within the margin at its first look')
  t.equal(expired.reason, `not sent: its payment expires at ${validBefore - 1n}, within ${margin} s`)
  t.equal(expired.fault, undefined)

  await clockAt(boundary + 1)
  const after = await timedPass(devnet)
  const [pastDeadline, pastMargin] = await Promise.all([devnet.get(atDeadline.id), devnet.get(atMargin.id)])
  t.equal(pastDeadline.stage, 'failed', 'the first pass past its deadline fails it')
  t.equal(pastDeadline.reason, `not sent before its deadline: ${followsReason(busy.address)}`, 'with the reason it was held for')
  t.equal(pastDeadline.fault, undefined, 'a payer in flight is no fault of the payer')
  t.equal(pastMargin.stage, 'failed', 'the first pass with its payment within the margin fails it')
  t.equal(pastMargin.reason, `not sent: its payment expires at ${validBefore}, within ${margin} s (${followsReason(busy.address)})`)
  t.equal(pastMargin.fault, undefined)
  t.same(after.seen.filter((seen) => seen.method === 'eth_sendRawTransaction'), [], 'nothing was sent')
  t.equal((await devnet.get(first.id)).stage, 'sending', 'the first still in flight')
  t.same(devnet.logged(/^runner pass failed$/), [])
})

t.test('a payment that no longer covers the worst case is held, backs off (pollMs x 2^holds), its reason written once, and is sent once fees fall back', async (t) => {
  const devnet = await startRunnerDevnet(t)
  const { pollMs } = devnet.network.runner
  const payer = await devnet.payer()
  const submission = await devnet.submit(payer)
  const { baseFeePerGas } = await devnet.client.getBlock({ blockTag: 'latest' })
  const maxFee = await raiseFees(devnet)
  const nonce = await devnet.client.getTransactionCount({ address: devnet.operator, blockTag: 'pending' })

  // Passes back to back, until the fourth look at it (a look: its exact transaction simulated).
  const passes: Awaited<ReturnType<typeof timedPass>>[] = []
  const looks = () => passes.filter((pass) => simulationsOf(pass.seen, submission).length > 0)
  let firstHeld: Submission | undefined
  await waitFor(
    async () => {
      passes.push(await timedPass(devnet))
      firstHeld ??= await devnet.get(submission.id)
      return looks().length
    },
    (count) => count >= 4,
    'four looks',
    10_000,
    5,
  )
  const held = await devnet.get(submission.id)
  t.equal(held.stage, 'waiting', 'not sent')
  t.equal(held.transaction, undefined)
  t.match(held.reason, COVER_REASON)
  t.equal(firstHeld!.reason, held.reason, 'held at the first pass, for the same reason each look')
  t.equal(held.updatedAt, firstHeld!.updatedAt, 'an unchanged reason is not written again')
  t.ok(held.updatedAt > submission.updatedAt, 'written once, at the first hold')
  t.same(
    looks().map((pass) => simulationsOf(pass.seen, submission).map((seen) => seen.method)),
    Array.from({ length: 4 }, () => ['eth_estimateGas', 'eth_call']),
    'each look estimates and runs the exact transaction, with the stipend measured at submit',
  )
  t.same(passes.filter((pass) => !looks().includes(pass)).flatMap((pass) => pass.seen), [], 'a pass with nothing due reads nothing from the node')
  t.equal(passes.flatMap((pass) => pass.seen).filter((seen) => seen.method === 'eth_sendRawTransaction').length, 0, 'nothing broadcast')
  const arrivals = looks().map((pass) => simulationsOf(pass.seen, submission)[0]!.at)
  for (let holds = 1; holds < arrivals.length; holds++) {
    t.ok(arrivals[holds]! - arrivals[holds - 1]! > pollMs * 2 ** holds, `after its hold number ${holds}, not looked at again for ${pollMs * 2 ** holds} ms (${arrivals[holds]! - arrivals[holds - 1]!} ms)`)
  }
  t.equal(await devnet.client.getTransactionCount({ address: devnet.operator, blockTag: 'pending' }), nonce, 'no nonce taken')

  await lowerFees(devnet, baseFeePerGas!)
  const sent = await waitFor(async () => (await devnet.pass(), devnet.get(submission.id)), (stored) => stored.stage === 'sending', 'sent at the fees it covers', 10_000, 5)
  t.equal(sent.reason, undefined, 'its reason cleared')
  t.equal(sent.transaction!.nonce, nonce)
  t.ok(await devnet.nodeHas(sent.transaction!.hash), 'the node holds it')
  t.equal(held.reason, coverReason(BigInt(sent.transaction!.gas) * maxFee), 'the worst case it was held for: its gas limit at the raised max fee')
  await devnet.mine()
  await devnet.pass()
  t.equal((await devnet.get(submission.id)).stage, 'done')
  t.same(devnet.logged(/^runner pass failed$/), [])
})

t.test('held submissions due with nothing new: the pass reads the fees once, and sends them all at that one reading', async (t) => {
  const devnet = await startRunnerDevnet(t)
  const { pollMs } = devnet.network.runner
  const submissions = [await devnet.submit(await devnet.payer()), await devnet.submit(await devnet.payer())]
  const { baseFeePerGas } = await devnet.client.getBlock({ blockTag: 'latest' })
  await raiseFees(devnet)
  const holding = await timedPass(devnet)
  for (const { id } of submissions) t.match((await devnet.get(id)).reason, COVER_REASON, 'held')
  await lowerFees(devnet, baseFeePerGas!)
  // Held once, each is due again pollMs x 2 after its look: both before this next pass.
  await waitFor(async () => Date.now(), (now) => now > holding.end + 2 * pollMs, 'both due', 5_000, 5)
  const { seen } = await timedPass(devnet)
  const sent = await Promise.all(submissions.map(({ id }) => devnet.get(id)))
  t.same(sent.map((submission) => submission.stage), ['sending', 'sending'], 'both sent in the one pass')
  t.equal(seen.filter((request) => request.method === 'eth_maxPriorityFeePerGas').length, 1, 'one fee reading for the pass')
  t.same(sent.map((submission) => signed(submission).maxFeePerGas), [signed(sent[0]!).maxFeePerGas, signed(sent[0]!).maxFeePerGas], 'both at it')
  await devnet.mine()
  await devnet.pass()
  t.same(devnet.logged(/^runner pass failed$|^submission held by a fault$/), [])
})

t.test('a pass re-checks at most 8 held submissions, the earliest due first, and runs again at once for the rest', async (t) => {
  // A minute's poll: a held one is due again only past its deadline, and no timer pass comes.
  const devnet = await startRunnerDevnet(t, { configure: (network) => ({ ...network, runner: { ...network.runner, pollMs: 60_000 } }) })
  // What each pass found waiting, in the store's order.
  const waitingAtPass: string[][] = []
  const active = devnet.store.active.bind(devnet.store)
  devnet.store.active = async (chain) => {
    const submissions = await active(chain)
    waitingAtPass.push(submissions.filter((submission) => submission.stage === 'waiting').map((submission) => submission.id))
    return submissions
  }
  const [broke, payer] = [await devnet.payer(), await devnet.payer()]
  // So that the first pass is over before their deadline's second.
  await earlyInASecond()
  const deadline = second(Date.now()) + 2
  // First in the store, but due last: its payment now fails, a failing hold backs off twice as
  // long as a market hold (pollMs x 2 against the 60 s cap).
  const failing = await devnet.submit(broke, { deadline })
  const outpriced = await Promise.all(Array.from({ length: 8 }, () => devnet.submit(payer, { deadline })))
  await spendAll(devnet, broke)
  await devnet.mine()
  await raiseFees(devnet)
  await devnet.pass()
  const order = waitingAtPass.at(-1)!
  t.equal(order.length, 9)
  t.equal(order[0], failing.id, 'the store has the failing one first')
  const failingReason = (await devnet.get(failing.id)).reason!
  t.match(failingReason, PAYMENT_FAILS)
  // Each its own worst case: the gas of a payment's calldata depends on its bytes.
  const reasons = new Map<string, string>([[failing.id, failingReason]])
  for (const submission of outpriced) {
    const held = await devnet.get(submission.id)
    t.match(held.reason, COVER_REASON, 'each held')
    reasons.set(submission.id, held.reason!)
  }

  // At its deadline, inside its backoff: not due.
  await clockAt(deadline)
  const atDeadline = await timedPass(devnet)
  t.equal(second(atDeadline.end), deadline, 'the pass ran within the deadline second')
  t.same(atDeadline.seen, [], 'nothing due, nothing read from the node')

  await clockAt(deadline + 1)
  const passesBefore = waitingAtPass.length
  devnet.runner.start()
  const all = [failing, ...outpriced]
  await waitFor(() => Promise.all(all.map((submission) => devnet.get(submission.id))), (stored) => stored.every((submission) => submission.stage === 'failed'), 'all failed', 5_000, 5)
  // A pass the last one would start begins within the same turn of the event loop.
  await new Promise((resolve) => setImmediate(resolve))
  t.same(
    waitingAtPass.slice(passesBefore),
    [order, [failing.id]],
    'past their deadline all 9 are due: 8 re-checked in one pass, the earliest due first; the one due last in the pass it starts at once',
  )
  for (const submission of all) {
    const stored = await devnet.get(submission.id)
    t.equal(stored.reason, `not sent before its deadline: ${reasons.get(submission.id)}`)
  }
  t.equal((await devnet.get(failing.id)).fault, 'payer', 'held for its payment failing: counted against the payer')
  for (const submission of outpriced) t.equal((await devnet.get(submission.id)).fault, undefined, 'a payment outpriced is no fault of the payer')
  t.same(devnet.logged(/^runner pass failed$/), [])
})

t.test('held submissions are re-checked 4 at once, in the order they fell due', async (t) => {
  const devnet = await startRunnerDevnet(t)
  const { pollMs } = devnet.network.runner
  const payer = await devnet.payer()
  const submissions = await Promise.all(Array.from({ length: 6 }, () => devnet.submit(payer)))
  await raiseFees(devnet)
  await devnet.pass()
  const heldAt = Date.now()
  // The pass looked at them in the store's order, so they fall due in it.
  const order = await devnet.store.active(devnet.network.name)
  t.same(order.map((submission) => COVER_REASON.test(submission.reason ?? '')), submissions.map(() => true), 'all held')

  // A slow node that fails their estimates: a re-check takes delayMs, so the lanes show.
  const delayMs = 400
  const markers = submissions.map((submission) => simulating(nonceOf(submission), ['eth_estimateGas']))
  devnet.chaos.rule('slow estimates', (element) => markers.some((matches) => matches(element)), { error: { code: -32000, message: 'node is slow' } }, Number.POSITIVE_INFINITY, delayMs)
  await waitFor(async () => Date.now(), (now) => now > heldAt + pollMs * 2, 'all due')
  const recheck = await timedPass(devnet)
  const estimates = recheck.seen.filter((seen) => seen.method === 'eth_estimateGas')
  const whose = (seen: Seen) => order.findIndex((submission) => simulating(nonceOf(submission))(seen))
  t.equal(estimates.length, 6, 'all 6 re-checked in the pass')
  t.same(estimates.slice(0, 4).map(whose).sort(), [0, 1, 2, 3], 'the 4 due first go first')
  t.same(estimates.slice(4).map(whose).sort(), [4, 5], 'then the rest')
  // Judged by when answers were written, not by the clock's distance from the first: on a loaded
  // machine a lane's answer comes later than delayMs, and the order is what the lanes promise.
  const first = estimates[0]!.at
  const firstAnswer = Math.min(...estimates.slice(0, 4).map((seen) => seen.answeredAt ?? Number.POSITIVE_INFINITY))
  const figures = estimates.map((seen) => `${seen.at - first}→${(seen.answeredAt ?? Number.NaN) - first}`).join(', ')
  t.ok(estimates[3]!.at < firstAnswer, `4 at once: the fourth arrived before any of the first 4 was answered (arrived→answered, ms: ${figures})`)
  t.ok(estimates[4]!.at >= firstAnswer, 'the fifth only once one of the first 4 is answered')
  t.ok(estimates[5]!.at >= firstAnswer)

  for (const submission of submissions) {
    const held = await devnet.get(submission.id)
    t.equal(held.stage, 'waiting')
    t.equal(held.reason, 'waiting: node is slow', 'held by the node\'s fault, in its words')
  }
  const faultLines = devnet.logged(/^submission held by a fault$/)
  t.same(faultLines.map((line) => line.submission).sort(), submissions.map((submission) => submission.id).sort(), 'each logged once')
  t.same(faultLines.map((line) => line.level), submissions.map(() => 40), 'as a warning')
  t.same(devnet.logged(/^runner pass failed$/), [])
})
