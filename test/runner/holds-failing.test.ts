import t from 'tap'
import { createWalletClient, erc20Abi, http, parseEther, type Address, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { devnetChain } from '../../core/devnet/chain.ts'
import type { Submission } from '../../core/store/store.ts'
import { waitFor } from '../fixtures/waitFor.ts'
import { simulating, type Seen } from '../liveness/chaosProxy.ts'
import { startRunnerDevnet, type RunnerDevnet } from './runnerDevnet.ts'

/** The relay's refusal of a payment whose payer no longer holds the amount: the shortfall, named. */
const PAYMENT_FAILS = /^waiting: the payer 0x[0-9a-fA-F]{40} holds (?:[0-9.]+ USDC, less than the [0-9.]+ USDC|no USDC, which) its payment transfers \(payment\.authorization\.value\): fund it with USDC, or pay in another token$/

// The runner's failing holds, one pass at a time: a submission whose own simulation fails after it
// was accepted, by its payer's doing (its payment now reverts) or by the node's (it answers the
// simulation with an error), is held, backs off, and fails once it has failed for
// `relay.failingHoldSec` (its minimum, 10 s, so the file takes that long): counted against the
// payer only when it was the payer's doing. A look at one failing by the payer's doing measures
// the call afresh: one simulation, the probe. The simulations of one submission are told apart by
// its payment's nonce, which its Runner call carries.

const FAILING_HOLD_SEC = 10

/** Moves all of `payer`'s USDC to the payee (given ETH for the gas, and mined): its signed payment now reverts. */
async function spendAll(devnet: RunnerDevnet, payer: { key: Hex; address: Address }): Promise<void> {
  await devnet.testClient.setBalance({ address: payer.address, value: parseEther('1') })
  const wallet = createWalletClient({ account: privateKeyToAccount(payer.key), chain: devnetChain(devnet.deployment.chainId), transport: http(devnet.anvil.rpcUrl) })
  const balance = await devnet.client.readContract({ address: devnet.deployment.usdc, abi: erc20Abi, functionName: 'balanceOf', args: [payer.address] })
  await wallet.writeContract({ address: devnet.deployment.usdc, abi: erc20Abi, functionName: 'transfer', args: [devnet.payee, balance] })
}

/** A signed transfer's nonce: it is in its Runner call's data, so it marks that submission's simulations. */
function nonceOf({ request: { payment } }: Submission): string {
  if (!('authorization' in payment)) throw new Error('not a signed transfer')
  return payment.authorization.nonce
}

interface Pass {
  readonly start: number
  readonly end: number
  readonly seen: Seen[]
}

/** The methods of `submission`'s simulations in each pass that made any: one entry a look. */
const looksAt = (passes: readonly Pass[], submission: Submission) =>
  passes.map((pass) => pass.seen.filter(simulating(nonceOf(submission))).map((seen) => seen.method)).filter((methods) => methods.length > 0)

t.test('a submission whose simulation keeps failing is held, then fails after failingHoldSec: the payer\'s doing with fault payer, the node\'s without', async (t) => {
  const devnet = await startRunnerDevnet(t, { configure: (network) => ({ ...network, relay: { ...network.relay, failingHoldSec: FAILING_HOLD_SEC } }) })
  const [broke, faulted, brokeThenFaulted, busy] = [await devnet.payer(), await devnet.payer(), await devnet.payer(), await devnet.payer()]
  const byPayer = await devnet.submit(broke)
  const byNode = await devnet.submit(faulted)
  // Its deadline comes long before failingHoldSec is up.
  const deadline = Math.floor(Date.now() / 1000) + 3
  const mixed = await devnet.submit(brokeThenFaulted, { deadline })
  const inFlight = await devnet.submit(busy)
  const follows = await devnet.submit(busy)
  await spendAll(devnet, broke)
  await spendAll(devnet, brokeThenFaulted)
  await devnet.mine()
  const nodeSays = 'node is overloaded'
  devnet.chaos.rule('the node fails its simulations', simulating(nonceOf(byNode)), { error: { code: -32000, message: nodeSays } })

  const passes: Pass[] = []
  const pass = async () => {
    const from = devnet.chaos.seen.length
    const start = Date.now()
    await devnet.pass()
    passes.push({ start, end: Date.now(), seen: devnet.chaos.seen.slice(from) })
  }
  await pass()
  const [first] = passes
  const heldByPayer = await devnet.get(byPayer.id)
  t.equal(heldByPayer.stage, 'waiting')
  t.match(heldByPayer.reason, PAYMENT_FAILS, 'held with the relay\'s refusal, as at submit')
  const paymentFails = heldByPayer.reason!
  const heldByNode = await devnet.get(byNode.id)
  t.equal(heldByNode.stage, 'waiting')
  t.equal(heldByNode.reason, `waiting: ${nodeSays}`, 'held with the node\'s words')
  t.match((await devnet.get(mixed.id)).reason, PAYMENT_FAILS)
  t.equal((await devnet.get(inFlight.id)).stage, 'sending')
  const followsHeld = await devnet.get(follows.id)
  t.equal(followsHeld.reason, `waiting: ${busy.address} has a transaction in flight; this one follows it`)
  t.same(devnet.logged(/^submission held by a fault$/).map((line) => [line.submission, line.level]), [[byNode.id, 40]], 'only the node\'s fault is logged, as a warning')

  // Its payer's doing first, then the node's: still counted against the payer at its deadline.
  const mixedSays = 'node is busy'
  devnet.chaos.rule('the node fails the mixed one', simulating(nonceOf(mixed)), { error: { code: -32000, message: mixedSays } })
  await waitFor(
    async () => (await pass(), Promise.all([devnet.get(byPayer.id), devnet.get(byNode.id)])),
    (stored) => stored.every((submission) => submission.stage === 'failed'),
    'both failed',
    FAILING_HOLD_SEC * 1000 + 5_000,
  )

  const failedByPayer = await devnet.get(byPayer.id)
  t.equal(failedByPayer.reason, `not sent: its payment or call kept failing for ${FAILING_HOLD_SEC} s: ${paymentFails}`)
  t.equal(failedByPayer.fault, 'payer', 'counted against the payer')
  t.equal(failedByPayer.transaction, undefined)
  const failedByNode = await devnet.get(byNode.id)
  t.equal(failedByNode.reason, `not sent: its simulation kept failing for ${FAILING_HOLD_SEC} s: waiting: ${nodeSays}`)
  t.equal(failedByNode.fault, undefined, 'the node\'s fault is not the payer\'s')
  // Looks doubling apart from pollMs x 2 (at 0, 100, 300 … 6300 ms), then the last once its time
  // is up (10 s), not a doubling later (12.7 s): 8 looks.
  t.same(
    looksAt(passes, byPayer),
    [['eth_estimateGas', 'eth_call'], ...Array.from({ length: 7 }, () => ['eth_call'])],
    'first with its stored stipend (then the probe), then each look measured afresh: the probe alone; 8 looks, doubling apart, the last at its time',
  )
  t.same(looksAt(passes, byNode), Array.from({ length: 8 }, () => ['eth_estimateGas']), 'the node\'s fault keeps the stipend: the estimate each look')
  // Held since the first pass: failed at the first pass to start failingHoldSec after it, not before.
  const timeUp = FAILING_HOLD_SEC * 1000
  const firstAfter = passes.findIndex((pass) => pass.start >= first!.end + timeUp)
  for (const submission of [byPayer, byNode]) {
    const looked = passes.flatMap((pass, index) => (pass.seen.some(simulating(nonceOf(submission))) ? [index] : []))
    const last = looked.at(-1)!
    t.ok(passes[last]!.end >= first!.start + timeUp, 'not failed before failingHoldSec')
    t.ok(firstAfter === -1 || last <= firstAfter, `failed by the first pass once its time was up (pass ${last}, ${firstAfter})`)
  }
  t.equal(devnet.logged(/^submission held by a fault$/).filter((line) => line.submission === byNode.id).length, 8, 'each look at the node\'s fault logged')
  t.same(devnet.logged(/^submission held by a fault$/).filter((line) => line.submission === byPayer.id), [], 'the payer\'s doing is no fault of the node')

  const failedMixed = await devnet.get(mixed.id)
  t.equal(failedMixed.stage, 'failed')
  t.equal(failedMixed.reason, `not sent before its deadline: waiting: ${mixedSays}`, 'failed at its deadline, with the reason it was held for last')
  t.equal(failedMixed.fault, 'payer', 'once its payer\'s doing, counted against the payer even when the node failed it since')
  const mixedLooks = looksAt(passes, mixed)
  t.same(mixedLooks[0], ['eth_estimateGas', 'eth_call'])
  t.same(mixedLooks.slice(1), mixedLooks.slice(1).map(() => ['eth_call']), 'still measured afresh after the node failed it')
  t.ok(mixedLooks.length >= 3, 'looked at again after the node failed it')

  // Held for a payer in flight all along: a market hold never fails by time, and its unchanged reason is never written again.
  const stillFollows = await devnet.get(follows.id)
  t.equal(stillFollows.stage, 'waiting')
  t.equal(stillFollows.reason, followsHeld.reason)
  t.equal(stillFollows.updatedAt, followsHeld.updatedAt, 'not written again')
  t.same(devnet.logged(/^runner pass failed$/), [])
})
