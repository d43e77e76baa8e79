import t, { type Test } from 'tap'
import { encodeFunctionData, type Address, type Hex } from 'viem'
import { stipendFor } from '../../core/relay/runnerTransaction.ts'
import { waitFor } from '../fixtures/waitFor.ts'
import { compileAdversaries, ratio, relayTools, startHarness, valueWei, type Call, type Submitted } from './harness.ts'

// Issue 12, part 1: no re-pricing after submit. The old relay checked the payment once, at submit;
// here the chain changes after the submit (base fee, the call's own gas, a stuck transaction being
// replaced, a call that burns its stipend at inclusion), and for every submission the test reads
// every transaction the runner signed (the recorder keeps each raw transaction it broadcast) and
// every receipt: each signed worst case (gas limit × max fee) ≤ the payment's value, and the ETH
// the runner spent (gas used × effective price) ≤ what the payee received, at the pool's price.
//
// The runner starts held back (its nonce read is refused) so that three submissions are accepted
// and the chain changes under them before the runner first looks: the time a real runner may take
// between a submit and its send (a backlog, a restart, a deadline minutes ahead).

const contracts = compileAdversaries()
const h = await startHarness(t, { holdRunner: true, stuckAfterMs: 1_000, pollMs: 100 })
const GATE: Address = '0x000000000000000000000000000000000000a001'
const GROWER_SMALL: Address = '0x000000000000000000000000000000000000a002'
const GROWER_LARGE: Address = '0x000000000000000000000000000000000000a003'
const BURNER: Address = '0x000000000000000000000000000000000000a004'
await h.place(GATE, contracts.Gate!.code)
await h.place(GROWER_SMALL, contracts.Grower!.code)
await h.place(GROWER_LARGE, contracts.Grower!.code)
await h.place(BURNER, contracts.Burner!.code)
const price = await h.price()
const quietBaseFee = await h.baseFee()

const gateCall = { to: GATE, data: encodeFunctionData({ abi: contracts.Gate!.abi, functionName: 'pass' }) }
const workCall = (grower: Address) => ({ to: grower, data: encodeFunctionData({ abi: contracts.Grower!.abi, functionName: 'work' }) })
const burnCall = { to: BURNER, data: encodeFunctionData({ abi: contracts.Burner!.abi, functionName: 'run' }) }

type Sent = Submitted
const { quote, submit, status, signedFor, submitLeast: least, lookedAt, passesPast } = relayTools(h)
async function submitLeast(t: Test, key: Hex, call: Call): Promise<Sent> {
  const sent = await least(key, call)
  t.match(sent.refusal, /is below the most the runner could pay for it now/, `least payment: ${sent.refusal}`)
  return sent
}

/** Every transaction signed for `sent`: its worst case (gas limit × max fee) within the payment's value. */
function checkSigned(t: Test, sent: Sent, label: string) {
  const value = valueWei(sent.amount, price)
  for (const transaction of signedFor(sent)) {
    const worst = transaction.gas * transaction.maxFeePerGas
    t.ok(worst <= value, `${label}: signed ${transaction.hash.slice(0, 10)} (nonce ${transaction.nonce}, ${transaction.gas} gas × ${transaction.maxFeePerGas} wei) = ${worst} wei ≤ the payment's ${value} wei`)
  }
}

/** The included transaction of `sent`: spent ≤ received, and the ledger line for the issue. */
async function checkLedger(t: Test, sent: Sent, label: string) {
  const hashes = new Set(signedFor(sent).map((transaction) => transaction.hash))
  const included = (await h.ledger()).filter((entry) => hashes.has(entry.hash))
  t.equal(included.length, 1, `${label}: exactly one of its ${hashes.size} signed transaction(s) was included`)
  const entry = included[0]!
  t.equal(entry.status, 'success', `${label}: the runner transaction succeeded`)
  t.ok(entry.spentWei <= entry.keptWei, `${label}: spent ${entry.spentWei} wei ≤ kept ${entry.keptWei} wei`)
  t.comment(
    `ledger ${label}: spent ${entry.spentWei} wei (gas used ${entry.gasUsed} of ${entry.gasLimit}), kept ${entry.charged} of ${entry.received} USDC units = ${entry.keptWei} wei, spent/kept ${ratio(entry.spentWei, entry.keptWei)}`,
  )
  return entry
}

// --- Accepted while the runner is held back; then the chain changes under them. ---
// Payers are funded now: later tests mine by hand.
const payers = [await h.payer(), await h.payer(), await h.payer(), await h.payer(), await h.payer()]
await h.store(GROWER_SMALL, 0n, 100n)
await h.store(GROWER_LARGE, 0n, 100n)
const gateQuote = await quote(gateCall)
const held = await submit(payers[0]!.key, gateCall, BigInt(gateQuote.amountBaseUnits))
const growsALittle = await submit(payers[1]!.key, workCall(GROWER_SMALL), BigInt((await quote(workCall(GROWER_SMALL))).amountBaseUnits))
let growsALot: Sent
// What the call needs (measured as the quote does, from the Runner), and the stipend priced at submit.
const needAt = async (grower: Address) => (await h.client.estimateGas({ account: h.deployment.runner.contract, to: grower, data: workCall(grower).data })) - 21_000n - 64n
const stipendAtSubmit = stipendFor(await needAt(GROWER_SMALL))
let needAfterBump = 0n

t.test('held back: three submissions accepted, nothing sent', async (t) => {
  growsALot = await submitLeast(t, payers[2]!.key, workCall(GROWER_LARGE))
  for (const sent of [held, growsALittle, growsALot]) t.equal((await status(sent)).stage, 'waiting')
  t.equal(h.recorder.sent.length, 0, 'the runner broadcast nothing')
  t.ok(h.recorder.refused('eth_getTransactionCount') > 0, 'the runner tried to start and was held back')
  // The chain moves: the gate closes; one call's gas grows by 100 rounds (~21k gas, within the quote's
  // margin), the other's by 200 rounds (~42k gas, past its least payment). Then the runner is let go.
  await h.store(GATE, 0n, 1n)
  await h.store(GROWER_SMALL, 0n, 200n)
  await h.store(GROWER_LARGE, 0n, 300n)
  needAfterBump = await needAt(GROWER_SMALL)
  h.recorder.allow('eth_getTransactionCount')
})

t.test('(c) gas that grows after the submit block: re-measured at send, sent when covered, else it waits', async (t) => {
  const done = await waitFor(() => status(growsALittle), (s) => s.stage === 'done' || s.stage === 'failed', 'the small grower done', 15_000)
  t.equal(done.stage, 'done', done.reason)
  t.equal(done.outcome.callSucceeded, true, 'the call ran to its end: at send its stipend was re-simulated and grown past what was priced at submit')
  const [transaction] = signedFor(growsALittle)
  t.ok(transaction, 'it was signed')
  t.ok(needAfterBump > stipendAtSubmit, `the call now needs ${needAfterBump} gas, more than the ~${stipendAtSubmit} stipend priced at submit`)
  t.ok(transaction!.callGas >= needAfterBump, `the signed stipend ${transaction!.callGas} covers what it needs now`)
  checkSigned(t, growsALittle, '(c) grows a little')
  await checkLedger(t, growsALittle, '(c) grows a little')

  const waiting = await waitFor(() => status(growsALot), (s) => /no longer covers/.test(s.reason ?? ''), 'the large grower waiting', 15_000)
  t.equal(waiting.stage, 'waiting')
  t.match(waiting.reason, /^waiting: the payment no longer covers the most the runner could pay at current fees \(\d+ wei\)$/)
  const worst = BigInt(/\((\d+) wei\)/.exec(waiting.reason)![1]!)
  t.ok(worst > valueWei(growsALot.amount, price), `the re-measured worst case ${worst} wei exceeds the payment's ${valueWei(growsALot.amount, price)} wei`)
  await lookedAt(growsALot, 2)
  t.equal(signedFor(growsALot).length, 0, 'nothing was signed for it while uncovered (two more looks)')
  t.equal((await status(growsALot)).stage, 'waiting')
  // The counter falls back: covered again, it is sent.
  await h.store(GROWER_LARGE, 0n, 100n)
  const sent = await waitFor(() => status(growsALot), (s) => s.stage === 'done' || s.stage === 'failed', 'the large grower done', 30_000)
  t.equal(sent.stage, 'done', sent.reason)
  checkSigned(t, growsALot, '(c) grows a lot')
  await checkLedger(t, growsALot, '(c) grows a lot, then shrinks')
})

t.test('(b) a held submission released after the base fee rose tenfold is not sent uncovered', async (t) => {
  const closed = await waitFor(() => status(held), (s) => /Gate: closed/.test(s.reason ?? ''), 'held by the gate', 15_000)
  t.equal(closed.stage, 'waiting', 'held: its call fails')
  t.equal(signedFor(held).length, 0)
  // The base fee goes to ten times the max fee the payment was priced at, then the gate opens.
  const spike = 10n * BigInt(gateQuote.feePerGasWei)
  await h.mineAtBaseFee(spike)
  // The runner reads the fees once per pass, before its simulations: let a pass that read them before
  // the spike end before the gate opens (a send at those stale fees would be covered, but stuck).
  await passesPast(held)
  await h.store(GATE, 0n, 0n)
  const uncovered = await waitFor(() => status(held), (s) => /no longer covers/.test(s.reason ?? ''), 'held by its cover', 30_000)
  t.equal(uncovered.stage, 'waiting')
  t.match(uncovered.reason, /^waiting: the payment no longer covers the most the runner could pay at current fees \(\d+ wei\)$/, 'status says why it waits')
  const worst = BigInt(/\((\d+) wei\)/.exec(uncovered.reason)![1]!)
  t.ok(worst > valueWei(held.amount, price), `worst case at the new fees ${worst} wei > the payment's ${valueWei(held.amount, price)} wei`)
  // No window is waited out here: held this long, it is looked at again only after a backoff of many
  // seconds. Whatever is signed for it, whenever, must be within its payment: checkSigned below.
  t.equal(signedFor(held).length, 0, 'nothing signed for it while uncovered')
  t.equal((await status(held)).stage, 'waiting')
  // The base fee falls back: sent at the fees of the moment, within its cover.
  await h.mineAtBaseFee(quietBaseFee)
  const done = await waitFor(() => status(held), (s) => s.stage === 'done' || s.stage === 'failed', 'the gate call done', 30_000)
  t.equal(done.stage, 'done', done.reason)
  t.equal(done.outcome.callSucceeded, true)
  checkSigned(t, held, '(b) held, base fee x10')
  await checkLedger(t, held, '(b) held, base fee x10, released when it fell')
})

t.test('(a) a base-fee spike while a stuck transaction is being replaced: no replacement past the payment', async (t) => {
  await h.testClient.setAutomine(false)
  const payer = payers[3]!
  const paid = BigInt((await quote(gateCall)).amountBaseUnits)
  const stuck = await submit(payer.key, gateCall, paid)
  const first = await waitFor(() => status(stuck), (s) => s.stage === 'sending', 'sent', 10_000)
  // Not mined (automine off): replaced every stuckAfterMs, each bump re-simulated and re-priced, until
  // the bump would pass the payment.
  const heldBack = await waitFor(() => status(stuck), (s) => /^replacement held/.test(s.reason ?? ''), 'a replacement held back', 20_000)
  t.equal(heldBack.stage, 'sending')
  t.equal(heldBack.transaction.nonce, first.transaction.nonce, 'same nonce throughout')
  const bumped = signedFor(stuck)
  t.ok(bumped.length >= 2, `replaced ${bumped.length - 1} time(s) within the payment before stopping`)
  // The spike: a block at ten times the last replacement's max fee; nothing pending can enter it.
  const last = bumped.at(-1)!
  t.equal(heldBack.transaction.hash, last.hash, 'the status follows the last replacement')
  const notReplaced = () => h.bruno.logs.filter((line) => line.includes('stuck transaction not replaced') && line.includes(stuck.id)).length
  const lookedBefore = notReplaced()
  await h.mineAtBaseFee(10n * last.maxFeePerGas)
  // Two more looks at it, the second surely at the spiked fees, each holding the replacement back.
  await waitFor(async () => notReplaced(), (looks) => looks >= lookedBefore + 2, 'two more looks holding the replacement back', 30_000)
  t.equal(signedFor(stuck).length, bumped.length, 'no replacement signed at the spiked fees')
  t.match((await status(stuck)).reason, /^replacement held: the payment does not cover the fee the node requires to replace it$/)
  checkSigned(t, stuck, '(a) replaced, then spiked')
  // anvil drops a pending transaction whose max fee is below a mined block's base fee: the spike
  // emptied its pool. geth and reth keep such a transaction (reth in its base-fee sub-pool) but any
  // node may drop it (eviction of the cheapest when the pool is full, as in a spike; a restart; another
  // node behind the provider's balancer). The runner must then broadcast it again, or the submission,
  // and with it the runner's nonce and every later submission, stays "sending" forever.
  const pool = (await h.client.request({ method: 'txpool_status' } as never)) as { pending: Hex }
  t.comment(`anvil's pool after the spike: ${BigInt(pool.pending)} pending`)
  await h.mineAtBaseFee(quietBaseFee)
  // Blocks are mined by hand. The runner puts its transaction back in the pool before the quiet block (which then
  // takes it) or after it: mine whenever the pool holds one, until the submission is no longer sending.
  const pending = async () => BigInt(((await h.client.request({ method: 'txpool_status' } as never)) as { pending: Hex }).pending)
  const mineWhenBack = async () => {
    const view = await status(stuck)
    if (view.stage === 'sending' && (await pending()) > 0n) await h.testClient.mine({ blocks: 1 })
    return view
  }
  const after = await waitFor(mineWhenBack, (s) => s.stage !== 'sending', 'the held transaction broadcast again and included', 30_000, 100).catch(() => undefined)
  t.ok(after, 'after the base fee fell, the held transaction was broadcast again and included (the runner re-broadcasts a stuck transaction it does not replace)')
  if (!after) {
    t.comment(`the runner's last words on it: ${h.bruno.logs.filter((line) => line.includes(stuck.id) || line.includes('runner pass failed')).slice(-5).join('\n')}`)
    // Do what the runner should have: broadcast the last signed replacement again (unless it is in already).
    await h.client.request({ method: 'eth_sendRawTransaction', params: [signedFor(stuck).at(-1)!.raw] } as never).catch(() => undefined)
    await h.testClient.mine({ blocks: 1 })
  }
  const done = await waitFor(() => status(stuck), (s) => s.stage === 'done' || s.stage === 'failed', 'the replacement done', 15_000)
  t.equal(done.stage, 'done', done.reason)
  t.equal(done.transaction.hash, signedFor(stuck).at(-1)!.hash)
  await checkLedger(t, stuck, `(a) stuck, replaced ${signedFor(stuck).length - 1}x, base fee spiked`)
})

t.test('(d) a call that burns to its stipend at inclusion, paid the least Bruno accepts, included at its max fee', async (t) => {
  // Cheap in simulation (150 rounds of hashing); armed after the send, it burns every unit of its stipend.
  await h.store(BURNER, 2n, 150n)
  const accepted = await submitLeast(t, payers[4]!.key, burnCall)
  const sent = await waitFor(() => status(accepted), (s) => s.stage === 'sending', 'sent', 10_000)
  // The runner stores the signed bytes before it broadcasts them: 'sending' can come before the recorder sees them.
  const transaction = (await waitFor(async () => signedFor(accepted).find((signed) => signed.hash === sent.transaction.hash), (found) => found !== undefined, 'its broadcast recorded', 10_000))!
  // Armed before inclusion; the block's base fee is the transaction's max fee (the worst price it can pay).
  await h.store(BURNER, 0n, 1n)
  await h.mineAtBaseFee(transaction.maxFeePerGas)
  const done = await waitFor(() => status(accepted), (s) => s.stage === 'done' || s.stage === 'failed', 'done', 15_000)
  t.equal(done.stage, 'done', done.reason)
  t.equal(done.outcome.callSucceeded, false, 'the call burned its stipend and failed; the payment stayed')
  const receipt = await h.client.getTransactionReceipt({ hash: done.transaction.hash })
  t.equal(receipt.effectiveGasPrice, transaction.maxFeePerGas, 'paid the max fee per gas it signed')
  t.ok(receipt.gasUsed > transaction.callGas, `gas used ${receipt.gasUsed} of the ${transaction.gas} limit: the whole ${transaction.callGas} stipend burned`)
  checkSigned(t, accepted, '(d) burns its stipend')
  const entry = await checkLedger(t, accepted, '(d) burns to its stipend, least payment, base fee = max fee')
  t.comment(`(d) gas used / gas limit ${ratio(entry.gasUsed, entry.gasLimit)}; the payment priced the limit at the max fee, so burning to the stipend stays inside it (the old relay's 1.13x came from signing 1.2x the gas it charged for)`)
  await h.testClient.setAutomine(true)
})

t.test('every transaction the runner signed, for every submission: worst case within its payment', async (t) => {
  t.ok(h.recorder.sent.length >= 6, `${h.recorder.sent.length} distinct runner transactions signed (${h.recorder.broadcasts()} broadcasts)`)
  for (const transaction of h.recorder.sent) {
    const value = valueWei(transaction.amount, price)
    t.ok(transaction.gas * transaction.maxFeePerGas <= value, `${transaction.hash.slice(0, 10)}: ${transaction.gas * transaction.maxFeePerGas} wei ≤ ${value} wei`)
  }
})
