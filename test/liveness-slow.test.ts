import t from 'tap'
import { encodeFunctionData, getAddress, type Address } from 'viem'
import { adversaryChain } from './adversarial/adversary.ts'
import { compileAdversaries } from './adversarial/harness.ts'
import { simulating, type RpcElement } from './liveness/chaosProxy.ts'
import { startLivenessBruno } from './liveness/livenessBruno.ts'
import { waitFor } from './fixtures/waitFor.ts'

// Issue 13, "A relay no client can stop": held submissions that are slow to fail. A pill here is a
// submission whose re-simulation the node answers only after SLOW_MS, with an error (geth answers an
// eth_call that runs past its RPCEVMTimeout, 5 s by default, with "execution aborted (timeout = 5s)"; a
// call made heavy after submit by a flag its sender flips does that for free: a pill is never sent, so
// never paid). The pills are held, never sent, and the good submission that arrives while the runner is
// re-simulating them is what this file measures: how long it waits behind them. (Its submit is slowed
// too: Bruno's client batches concurrent JSON-RPC requests, so the submit's simulations may share an HTTP
// exchange with a pill's re-simulation and wait for the node's slow answer to it.)

const SLOW_MS = 1_500
const PILLS = 4

const bruno = await startLivenessBruno(t, { holdRunner: true, pollMs: 100 })
const { mcp, chaos } = bruno
const chain = adversaryChain(bruno)
const gate = compileAdversaries().Gate!
const pills: Address[] = Array.from({ length: PILLS }, (_, index) => getAddress(`0x51040000000000000000000000000000000000${(index + 1).toString(16).padStart(2, '0')}`))
for (const address of pills) await chain.testClient.setCode({ address, bytecode: gate.code })
const status = (id: string) => mcp.call('status', { id })

t.test(`a good submission arriving while ${PILLS} held pills are re-simulated (each ${SLOW_MS} ms to fail) waits behind at most one of them each way`, async (t) => {
  const call = (to: Address) => ({ to, data: encodeFunctionData({ abi: gate.abi, functionName: 'pass' }) })
  const amount = BigInt((await mcp.call('quote', { chain: 'local', call: call(pills[0]!), token: 'USDC', payment: 'authorization' })).amountBaseUnits)
  const ids: string[] = []
  for (const address of pills) {
    const payer = await bruno.payer()
    ids.push((await mcp.call('submit', { chain: 'local', call: call(address), payment: await bruno.payment(payer.key, amount) })).id)
  }
  // The good one's payment is signed now, so that it is submitted the moment the test sees a re-simulation.
  const payer = await bruno.payer()
  const goodCall = bruno.readCall(payer.address)
  const payment = await bruno.payment(payer.key, BigInt((await mcp.call('quote', { chain: 'local', call: goodCall, token: 'USDC', payment: 'authorization' })).amountBaseUnits))
  const anyPill = (element: RpcElement) => pills.some((address) => simulating(address)(element))
  const slow = chaos.rule('slow node error', anyPill, { error: { code: -32000, message: 'execution aborted (timeout = 5s)' } }, Number.POSITIVE_INFINITY, SLOW_MS)
  bruno.release()

  // The first pass looks at each pill once (they are new); once the next pass is re-simulating one of
  // them (a 5th look), a good submission arrives.
  await waitFor(async () => slow.hits, (hits) => hits > PILLS, 'a held pill re-simulated in a later pass', PILLS * SLOW_MS + 15_000)
  const submittedAt = Date.now()
  const good = await mcp.call('submit', { chain: 'local', call: goodCall, payment })
  const acceptedAt = Date.now()
  const done = await waitFor(() => status(good.id), (view) => view.stage === 'done' || view.stage === 'failed', 'the good submission', 60_000)
  const doneAt = done.updatedAt as number
  t.equal(done.stage, 'done', 'the good submission is done')
  for (const id of ids) t.equal((await status(id)).stage, 'waiting', 'each pill is still held, never sent')
  const sentAt = chaos.seen.find((seen) => seen.method === 'eth_sendRawTransaction' && seen.at >= acceptedAt)!.at
  const looks = (from: number, to: number) => chaos.seen.filter((seen) => seen.rule === slow.name && seen.at >= from && seen.at < to).length
  t.comment(
    `figure | ${PILLS} held pills, each ${SLOW_MS} ms to fail: the good submission's submit took ${acceptedAt - submittedAt} ms; ` +
      `accepted → broadcast ${sentAt - acceptedAt} ms (${looks(acceptedAt, sentAt)} pill re-simulations began first); ` +
      `broadcast → done ${doneAt - sentAt} ms (${looks(sentAt, doneAt)} more began before its receipt was read); submit → done ${doneAt - submittedAt} ms ` +
      `(with nothing held: ~100 ms, test/liveness.test.ts)`,
  )
  // PRODUCT BUG (issue 13): held submissions that are slow to fail hold every new one back, pass after
  // pass (core/runner/runner.ts #tick):
  // - the pass re-simulates every due held submission in turn (`for (const submission of [...fresh, ...due,
  //   ...expired]) await this.#send(…)`); a submission that arrives meanwhile only sets `#again`, so it waits
  //   for the rest of the pass, however many held ones are still due in it ("new before held" is per pass);
  // - transactions in flight are followed only after all of a pass's sends, and a transaction sent in a
  //   pass is not in that pass's `inFlight` (read at its start): its receipt is read only after the next
  //   pass's held re-simulations too;
  // - submit and the runner share one viem client that batches concurrent requests (`batch: { wait: 0 }`,
  //   core/chain/networks.ts): a submit's round trip that leaves with a pill's re-simulation waits for the
  //   node's slow answer to it, and the next one leaves with the next pill's, in step.
  // Bounds asserted: at most one slow re-simulation ahead of its send, and one ahead of its receipt.
  // They are counted, not timed (the figure above has the times): on a loaded machine every step is
  // slower, but a runner that made the good one wait behind every pill would start more of them.
  t.ok(looks(acceptedAt, sentAt) <= 1, `at most one pill re-simulation began between its acceptance and its broadcast: ${looks(acceptedAt, sentAt)}`)
  t.ok(looks(sentAt, doneAt) <= 1, `at most one more began before its receipt was read: ${looks(sentAt, doneAt)}`)
})
