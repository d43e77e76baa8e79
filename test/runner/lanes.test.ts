import t from 'tap'
import { getAddress, parseEther, type Address, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { LANE_FUNDING_CHECK_MS } from '../../core/runner/laneFunding.ts'
import type { Submission } from '../../core/store/store.ts'
import { startRunnerDevnet, type RunnerDevnet } from './runnerDevnet.ts'

// Issue 33: a runner of several keys (`runner.lanes`), one pass at a time. Each lane has its own nonces; a new send goes
// on the least loaded lane, never on one whose transaction is stuck while another can take it, never on one short of
// ETH; a payer's next submission waits for its one in flight, whichever lane that is on.

const laneOf = (submission: Submission) => getAddress(submission.transaction!.from!)

type Payer = Awaited<ReturnType<RunnerDevnet['payer']>>

/** `count` fresh payers. Each is funded in a block of its own, which also takes whatever the node holds pending. */
async function payers(devnet: RunnerDevnet, count: number): Promise<Payer[]> {
  const made = []
  for (let index = 0; index < count; index++) made.push(await devnet.payer())
  return made
}

async function submitAll(devnet: RunnerDevnet, from: readonly Payer[]): Promise<Submission[]> {
  const submissions = []
  for (const payer of from) submissions.push(await devnet.submit(payer))
  return submissions
}

const submitted = async (devnet: RunnerDevnet, count: number) => submitAll(devnet, await payers(devnet, count))

const reread = (devnet: RunnerDevnet, submissions: readonly Submission[]) => Promise.all(submissions.map((submission) => devnet.get(submission.id)))

/** How many of `submissions` each lane sent, in the lanes' order. */
function perLane(devnet: RunnerDevnet, submissions: readonly Submission[]): number[] {
  return devnet.lanes.map((lane) => submissions.filter((submission) => submission.transaction && laneOf(submission) === lane).length)
}

t.test('an idle runner knows each lane\'s next nonce after its first pass, before any send (issue 49, point 8)', async (t) => {
  const devnet = await startRunnerDevnet(t, { lanes: 1 })
  const nonces = await Promise.all(devnet.lanes.map((lane) => devnet.client.getTransactionCount({ address: lane, blockTag: 'pending' })))
  t.same(devnet.runner.lanes().map((lane) => lane.nextNonce), [undefined, undefined], 'unknown before the first pass')
  await devnet.pass()
  t.same(devnet.runner.lanes().map((lane) => lane.nextNonce), nonces, 'each lane\'s pending count, with nothing to send')
})

t.test('four lanes: eight payers\' submissions go two per lane, each lane at its own nonces; a payer\'s second waits for its first', async (t) => {
  const devnet = await startRunnerDevnet(t, { lanes: 3 })
  t.equal(devnet.lanes.length, 4)
  const nonces = await Promise.all(devnet.lanes.map((lane) => devnet.client.getTransactionCount({ address: lane, blockTag: 'pending' })))
  const submissions = await submitted(devnet, 8)
  const payer = await devnet.payer()
  const first = await devnet.submit(payer)
  const second = await devnet.submit(payer)

  await devnet.pass()
  const sent = await reread(devnet, [...submissions, first])
  t.same(perLane(devnet, sent), [3, 2, 2, 2], 'least loaded first: nine sends over four lanes, the first lane breaking ties')
  for (const [index, lane] of devnet.lanes.entries()) {
    const ofLane = sent.filter((submission) => laneOf(submission) === lane).map((submission) => submission.transaction!.nonce).sort((a, b) => a - b)
    t.same(ofLane, Array.from({ length: ofLane.length }, (_, offset) => nonces[index]! + offset), `lane ${index + 1}: consecutive nonces of its own`)
  }
  const held = await devnet.get(second.id)
  t.equal(held.stage, 'waiting', 'the payer\'s second is not sent on another lane beside its first')
  t.equal(held.reason, `waiting: ${payer.address} has a transaction in flight; this one follows it`)

  await devnet.mine()
  await devnet.pass()
  await devnet.pass()
  const followed = await devnet.get(second.id)
  t.equal(followed.stage, 'sending', 'sent once the first is included')
  await devnet.mine()
  await devnet.pass()
  t.same((await reread(devnet, [...submissions, first, second])).map((submission) => submission.stage), Array(10).fill('done'))
  const used = new Set((await devnet.ledger()).map((entry) => entry.hash))
  t.equal(used.size, 10, 'ten runner transactions, one per submission, none sent twice')
})

t.test('the lanes send at once: one lane slow to simulate does not hold another lane\'s send', async (t) => {
  const devnet = await startRunnerDevnet(t, { lanes: 1 })
  const [slowLane, otherLane] = devnet.lanes as [Address, Address]
  const [first, second] = await submitted(devnet, 2)
  // The node takes 1.5 s to answer the slow lane's estimate, and then fails it.
  const slow = devnet.chaos.rule(
    'slow lane',
    (element) => element.method === 'eth_estimateGas' && Array.isArray(element.params) && getAddress((element.params[0] as { from: Address }).from) === slowLane,
    { error: { code: -32000, message: 'header not found' } },
    1,
    1_500,
  )
  await devnet.pass()
  t.equal(slow.hits, 1, 'the first submission was simulated on the first lane')
  const held = await devnet.get(first!.id)
  t.same([held.stage, held.reason], ['waiting', 'waiting: header not found'], 'held by the fault on its lane')
  const sent = await devnet.get(second!.id)
  t.equal(laneOf(sent), otherLane, 'the second went on the other lane')
  const answered = devnet.chaos.seen.find((seen) => seen.rule === 'slow lane')!.answeredAt!
  const broadcast = devnet.chaos.seen.find((seen) => seen.method === 'eth_sendRawTransaction')!
  t.ok(broadcast.at < answered, `the other lane broadcast ${answered - broadcast.at} ms before the slow lane's estimate was answered`)
  await devnet.mine()
  await devnet.pass()
})

t.test('a lane whose transaction is stuck takes no new work while the others can; included, it takes work again', async (t) => {
  const devnet = await startRunnerDevnet(t, { lanes: 3 })
  const [stuckLane, ...others] = devnet.lanes as [Address, ...Address[]]
  // Every payer funded first: a funding block would include what the lanes have pending.
  const funded = await payers(devnet, 9)
  const [lone] = await submitAll(devnet, funded.slice(0, 1))
  await devnet.pass()
  const sent = await devnet.get(lone!.id)
  t.equal(laneOf(sent), stuckLane, 'the first send takes the first lane')
  // Its transaction made older than runner.stuckAfterMs (60 s) in the store, where the runner reads its age: the others'
  // sends below stay far younger than that however slow the machine, where a wait as long as the threshold left no margin.
  const sentLongAgo = Date.now() - devnet.network.runner.stuckAfterMs - 1_000
  const fence = { key: devnet.runnerKey, epoch: await devnet.store.runnerEpoch(devnet.runnerKey) }
  await devnet.store.update(lone!.id, { transaction: { ...sent.transaction!, sentAt: sentLongAgo, firstSentAt: sentLongAgo } }, fence)

  const six = await submitAll(devnet, funded.slice(1, 7))
  await devnet.pass()
  t.same(perLane(devnet, await reread(devnet, six)), [0, 2, 2, 2], 'its transaction unincluded past runner.stuckAfterMs: six sends go to the other three')
  const [next] = await submitAll(devnet, funded.slice(7, 8))
  await devnet.pass()
  const placed = laneOf(await devnet.get(next!.id))
  t.ok(others.includes(placed), `the least loaded lane is the stuck one (1 in flight against 2), yet the send goes on ${placed}`)

  await devnet.mine()
  await devnet.pass()
  const [after] = await submitAll(devnet, funded.slice(8))
  await devnet.pass()
  t.equal(laneOf(await devnet.get(after!.id)), stuckLane, 'included, the first lane takes work again')
  await devnet.mine()
  await devnet.pass()
})

t.test('a lane out of ETH is passed over, its submission sent on another lane; funded, it takes work again', async (t) => {
  const devnet = await startRunnerDevnet(t, { lanes: 1 })
  const [firstLane, poorLane] = devnet.lanes as [Address, Address]
  const funded = await payers(devnet, 4)
  await devnet.testClient.setBalance({ address: poorLane, value: 0n })
  const two = await submitAll(devnet, funded.slice(0, 2))
  await devnet.pass()
  const sent = await reread(devnet, two)
  t.same(sent.map((submission) => [submission.stage, laneOf(submission)]), [['sending', firstLane], ['sending', firstLane]], 'both on the first lane: the second lane cannot pay')
  t.same(devnet.logged(/^the runner cannot pay for gas/).map((line) => line.operator), [poorLane], 'the poor lane is named once')
  await devnet.mine()
  await devnet.pass()

  await devnet.testClient.setBalance({ address: poorLane, value: parseEther('10') })
  const more = await submitAll(devnet, funded.slice(2))
  await devnet.pass()
  t.same(perLane(devnet, await reread(devnet, more)), [1, 1], 'funded again: it takes its share')
  t.same(devnet.logged(/^runner lane funded again/).map((line) => line.operator), [poorLane])
  await devnet.mine()
  await devnet.pass()
})

t.test('every lane full: the rest wait in turn, named as such', async (t) => {
  const devnet = await startRunnerDevnet(t, { lanes: 1, configure: (network) => ({ ...network, runner: { ...network.runner, maxInFlight: 2 } }) })
  const five = await submitted(devnet, 5)
  await devnet.pass()
  const sent = await reread(devnet, five)
  t.same(perLane(devnet, sent), [2, 2], 'two in flight per lane')
  t.equal(sent[4]!.stage, 'waiting')
  t.equal(sent[4]!.reason, 'waiting: each of the runner\'s 2 lanes has 2 transactions in flight (as many as a node\'s pool keeps per sender) or is short of ETH; this one goes when one is included')
  await devnet.mine()
  await devnet.pass()
  await devnet.pass()
  t.equal((await devnet.get(five[4]!.id)).stage, 'sending', 'a slot freed: it goes')
  await devnet.mine()
  await devnet.pass()
})

t.test('runner.treasury tops a lane under its floor up to the target, once per interval; the others are left alone', async (t) => {
  // anvil #5: a funded key nothing else on this devnet uses.
  const treasuryKey = '0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba'
  const treasury = { key: { env: 'TEST_TREASURY' }, floorWei: parseEther('1').toString(), targetWei: parseEther('5').toString(), intervalSec: 60 }
  // The treasury's clock, moved by hand past its throttle and its interval.
  let clock = Date.now()
  const devnet = await startRunnerDevnet(t, { lanes: 1, treasuryKey, treasuryNow: () => clock, configure: (network) => ({ ...network, runner: { ...network.runner, treasury } }) })
  const [firstLane, lowLane] = devnet.lanes as [Address, Address]
  const firstBalance = await devnet.client.getBalance({ address: firstLane })
  await devnet.testClient.setBalance({ address: lowLane, value: parseEther('0.5') })

  const toppedUpAt = clock
  await devnet.pass()
  await devnet.mine()
  t.equal(await devnet.client.getBalance({ address: lowLane }), parseEther('5'), 'topped up to the target')
  t.equal(await devnet.client.getBalance({ address: firstLane }), firstBalance, 'the lane over its floor is left alone')
  const topUps = devnet.logged(/^topped up a runner lane from the treasury$/)
  t.same(topUps.map((line) => [line.operator, line.value]), [[lowLane, parseEther('4.5').toString()]], 'logged once, with what was sent')

  // Under its floor again at once, and looked at again past the 10 s between balance reads (LANE_FUNDING_CHECK_MS),
  // but within runner.treasury.intervalSec: nothing more is sent however often the runner passes.
  await devnet.testClient.setBalance({ address: lowLane, value: parseEther('0.1') })
  await devnet.pass()
  clock += LANE_FUNDING_CHECK_MS + 1_000
  await devnet.pass()
  await devnet.pass()
  await devnet.mine()
  t.equal(await devnet.client.getBalance({ address: lowLane }), parseEther('0.1'), 'no second top-up within runner.treasury.intervalSec')
  t.equal(devnet.logged(/^topped up a runner lane from the treasury$/).length, 1, 'still one top-up logged')

  // Past the interval since its top-up: topped up again.
  clock = toppedUpAt + treasury.intervalSec * 1_000
  await devnet.pass()
  await devnet.mine()
  t.equal(await devnet.client.getBalance({ address: lowLane }), parseEther('5'), 'topped up again once runner.treasury.intervalSec has passed')
  t.same(devnet.logged(/^topped up a runner lane from the treasury$/).slice(1).map((line) => [line.operator, line.value]), [[lowLane, parseEther('4.9').toString()]], 'the second top-up logged, with what was sent')
})

t.test('runner.treasury: two lanes short at once are both topped up, at the treasury\'s consecutive nonces', async (t) => {
  const treasuryKey = '0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba'
  const treasury = { key: { env: 'TEST_TREASURY' }, floorWei: parseEther('1').toString(), targetWei: parseEther('5').toString(), intervalSec: 60 }
  const devnet = await startRunnerDevnet(t, { lanes: 2, treasuryKey, configure: (network) => ({ ...network, runner: { ...network.runner, treasury } }) })
  const [, lowLane, lowerLane] = devnet.lanes as [Address, Address, Address]
  const treasuryAddress = privateKeyToAccount(treasuryKey).address
  const nonce = await devnet.client.getTransactionCount({ address: treasuryAddress, blockTag: 'pending' })
  await devnet.testClient.setBalance({ address: lowLane, value: parseEther('0.5') })
  await devnet.testClient.setBalance({ address: lowerLane, value: parseEther('0.2') })

  await devnet.pass()
  await devnet.mine()
  t.same(
    [await devnet.client.getBalance({ address: lowLane }), await devnet.client.getBalance({ address: lowerLane })],
    [parseEther('5'), parseEther('5')],
    'both topped up to the target',
  )
  const topUps = devnet.logged(/^topped up a runner lane from the treasury$/)
  t.same(topUps.map((line) => [line.operator, line.value]), [[lowLane, parseEther('4.5').toString()], [lowerLane, parseEther('4.8').toString()]], 'one transfer each')
  const sent = await Promise.all(topUps.map((line) => devnet.client.getTransaction({ hash: line.hash as Hex })))
  t.same(sent.map((transaction) => [getAddress(transaction.from), transaction.nonce]), [[treasuryAddress, nonce], [treasuryAddress, nonce + 1]], 'from the treasury, at consecutive nonces')
  const receipts = await Promise.all(topUps.map((line) => devnet.client.getTransactionReceipt({ hash: line.hash as Hex })))
  t.same(receipts.map((receipt) => receipt.status), ['success', 'success'], 'both mined')
})
