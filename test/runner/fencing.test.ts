import t, { type Test } from 'tap'
import { localOwnership, type RunnerOwnership } from '../../core/store/ownership.ts'
import { waitFor } from '../fixtures/waitFor.ts'
import { dropTransaction, lowerFees, raiseFees, rawBroadcasts, sendByHand, startRunnerDevnet, type RunnerDevnet } from './runnerDevnet.ts'

// The runner key's tenure (issue 16, fenced replicas) as one runner sees it: a write refused for a
// stale epoch stops it before anything is broadcast, it stands down and says so, and it acts again
// only once it takes the key at a new epoch, starting over as after a restart. The store and the
// ownership are the real SQLite ones; "another process" taking the key is the test raising the
// key's epoch in that store, as a PostgreSQL replica's takeover does.

const standDown = /^runner stands down: /

/** The SQLite ownership, with a switch: while `lost`, the key counts as not held and cannot be taken. */
function switchableOwnership(devnet: { store: RunnerDevnet['store']; runnerKey: string }) {
  const inner = localOwnership(devnet.store, devnet.runnerKey)
  const state = { lost: false }
  const ownership: RunnerOwnership = {
    acquire: async () => (state.lost ? undefined : inner.acquire()),
    held: () => !state.lost && inner.held(),
    release: () => inner.release(),
  }
  return { ownership, state }
}

/** A devnet whose runner's ownership has the switch above. */
async function startSwitchable(t: Test) {
  let switchable: ReturnType<typeof switchableOwnership> | undefined
  const devnet = await startRunnerDevnet(t, {
    ownership: (store, key) => {
      switchable = switchableOwnership({ store, runnerKey: key })
      return switchable.ownership
    },
  })
  return { devnet, switchable: switchable! }
}

/** The key is lost the moment a send is logged (its lock's session ended, say); the returned function gives it back. */
function loseAtSent(devnet: RunnerDevnet, state: { lost: boolean }): () => void {
  const push = devnet.logs.push.bind(devnet.logs)
  devnet.logs.push = (...lines) => {
    if (lines.some((line) => line.msg === 'sent')) state.lost = true
    return push(...lines)
  }
  return () => {
    devnet.logs.push = push
    state.lost = false
  }
}

t.test('a send refused by the store for a stale epoch is never broadcast: the runner stands down, then takes the key again at a new epoch', async (t) => {
  const devnet = await startRunnerDevnet(t)
  const payer = await devnet.payer()
  await devnet.pass()
  const a = await devnet.submit(payer)
  const nonce = await devnet.client.getTransactionCount({ address: devnet.operator, blockTag: 'pending' })
  t.equal(await devnet.store.runnerEpoch(devnet.runnerKey), 1, 'the runner took the key at epoch 1')
  // Another process takes the key over while this one still believes it owns it.
  const taken = await devnet.store.takeRunnerKey(devnet.runnerKey)
  t.equal(taken.epoch, 2)

  await devnet.pass()
  t.same(rawBroadcasts(devnet), [], 'nothing was broadcast')
  const refused = await devnet.get(a.id)
  t.equal(refused.stage, 'waiting', 'the submission is as it was')
  t.equal(refused.transaction, undefined, 'with no transaction stored')
  t.equal(await devnet.client.getTransactionCount({ address: devnet.operator, blockTag: 'pending' }), nonce, 'the node saw no transaction')
  const lines = devnet.logged(standDown)
  t.equal(lines.length, 1, 'it says so once')
  t.equal(lines[0]!.msg, 'runner stands down: it lost ownership of the runner key at epoch 1 to epoch 2; it sends nothing until it takes the key again')
  t.equal(lines[0]!.epoch, 1)
  t.equal(lines[0]!.current, 2)
  t.equal(lines[0]!.level, 40, 'a warning')
  t.same(devnet.logged(/runner pass failed/), [], 'a takeover is no failure to back off from')

  // The next pass takes the key at a new epoch and sends from the store's state.
  await devnet.pass()
  t.equal(await devnet.store.runnerEpoch(devnet.runnerKey), 3, 'taken again at epoch 3')
  const sent = await devnet.get(a.id)
  t.equal(sent.stage, 'sending')
  t.equal(sent.transaction!.nonce, nonce, 'at the nonce the refused send would have had: none skipped')
  t.same(rawBroadcasts(devnet), [sent.transaction!.raw], 'broadcast once')
  await devnet.mine()
  await devnet.pass()
  t.equal((await devnet.get(a.id)).stage, 'done')
})

t.test('a receipt\'s write refused for a stale epoch stands the runner down too: following a transaction is a write', async (t) => {
  const devnet = await startRunnerDevnet(t)
  const payer = await devnet.payer()
  const a = await devnet.submit(payer)
  await devnet.pass()
  t.equal((await devnet.get(a.id)).stage, 'sending')
  await devnet.store.takeRunnerKey(devnet.runnerKey)
  await devnet.mine()
  await devnet.pass()
  t.equal((await devnet.get(a.id)).stage, 'sending', 'the stale owner recorded nothing: the new owner will')
  const lines = devnet.logged(standDown)
  t.equal(lines.length, 1, 'it stood down')
  t.equal(lines[0]!.msg, 'runner stands down: it lost ownership of the runner key at epoch 1 to epoch 2; it sends nothing until it takes the key again')
  t.same(devnet.logged(/^following a transaction failed/), [], 'not logged as a transaction it failed to follow')
  await devnet.pass()
  t.equal((await devnet.get(a.id)).stage, 'done', 'taken again at epoch 3, it records the receipt')
})

t.test('ownership lost between passes: the runner stands down at its own epoch, sends nothing while another owns the key, and starts over when it takes it', async (t) => {
  const { devnet, switchable } = await startSwitchable(t)
  const [first, second] = [await devnet.payer(), await devnet.payer()]
  const a = await devnet.submit(first)
  await devnet.pass()
  const sentA = await devnet.get(a.id)
  t.equal(sentA.stage, 'sending')

  switchable.state.lost = true
  const b = await devnet.submit(second)
  await devnet.pass()
  const lines = devnet.logged(standDown)
  t.equal(lines.length, 1)
  t.equal(lines[0]!.msg, 'runner stands down: it lost ownership of the runner key at epoch 1; it sends nothing until it takes the key again', 'the key is at its own epoch still: no new owner named')
  t.equal(lines[0]!.current, 1)
  t.equal((await devnet.get(b.id)).stage, 'waiting', 'nothing sent while another owns the key')
  const asked = devnet.chaos.seen.length
  await devnet.pass()
  t.equal(devnet.logged(standDown).length, 1, 'it stands down once, not at every pass')
  t.same(devnet.chaos.seen.slice(asked), [], 'a pass without the key asks the node nothing')
  t.equal((await devnet.get(b.id)).stage, 'waiting')

  // Dropped from the node meanwhile: taking the key back starts over as after a restart.
  await dropTransaction(devnet, sentA.transaction!.hash)
  switchable.state.lost = false
  await devnet.pass()
  t.equal(await devnet.store.runnerEpoch(devnet.runnerKey), 2, 'taken at a new epoch')
  t.ok(await devnet.nodeHas(sentA.transaction!.hash), 'what was in flight is broadcast again, as after a restart')
  const sentB = await devnet.get(b.id)
  t.equal(sentB.transaction!.nonce, sentA.transaction!.nonce + 1, 'the next nonce re-read: past the stored one')
  await devnet.mine()
  await devnet.pass()
  t.same([(await devnet.get(a.id)).stage, (await devnet.get(b.id)).stage], ['done', 'done'])
})

t.test('ownership lost in the middle of a pass: what is left of the pass is not sent by this process', async (t) => {
  const { devnet, switchable } = await startSwitchable(t)
  const payers = [await devnet.payer(), await devnet.payer(), await devnet.payer()]
  const submissions = []
  for (const payer of payers) submissions.push(await devnet.submit(payer))
  loseAtSent(devnet, switchable.state)
  await devnet.pass()
  const stages = await Promise.all(submissions.map(async ({ id }) => (await devnet.get(id)).stage))
  t.same(stages, ['sending', 'waiting', 'waiting'], 'the first went; the others wait for the key\'s owner')
  t.equal(rawBroadcasts(devnet).length, 1, 'one broadcast')
})

t.test('ownership lost at a pass\'s last new send: what is in flight is not followed by this process', async (t) => {
  const { devnet, switchable } = await startSwitchable(t)
  const inFlight = await devnet.submit(await devnet.payer())
  await devnet.pass()
  t.equal((await devnet.get(inFlight.id)).stage, 'sending')
  await devnet.mine()
  const fresh = await devnet.submit(await devnet.payer())
  const broadcasts = rawBroadcasts(devnet).length
  const regain = loseAtSent(devnet, switchable.state)
  await devnet.pass()
  t.equal((await devnet.get(fresh.id)).stage, 'sending', 'the new one went')
  t.equal(rawBroadcasts(devnet).length, broadcasts + 1, 'and nothing after it')
  t.equal((await devnet.get(inFlight.id)).stage, 'sending', 'the mined one\'s receipt not written by this process')
  regain()
  await devnet.mine()
  await devnet.pass()
  t.same(await Promise.all([inFlight, fresh].map(async ({ id }) => (await devnet.get(id)).stage)), ['done', 'done'], 'followed once the key is back')
})

t.test('ownership lost while held submissions are sent again: the rest of them wait for the key\'s owner', async (t) => {
  const { devnet, switchable } = await startSwitchable(t)
  // Two held (outpriced), then due again at fees they cover, with nothing new beside them.
  const { baseFeePerGas } = await devnet.client.getBlock({ blockTag: 'latest' })
  const held = [await devnet.submit(await devnet.payer()), await devnet.submit(await devnet.payer())]
  await raiseFees(devnet)
  await devnet.pass()
  const heldAt = Date.now()
  t.same(await Promise.all(held.map(async ({ id }) => (await devnet.get(id)).stage)), ['waiting', 'waiting'])
  await lowerFees(devnet, baseFeePerGas!)
  await waitFor(async () => Date.now(), (now) => now > heldAt + 2 * devnet.network.runner.pollMs, 'the held ones due', 5_000, 5)
  const regain = loseAtSent(devnet, switchable.state)
  await devnet.pass()
  const stages = await Promise.all(held.map(async ({ id }) => (await devnet.get(id)).stage))
  t.same([...stages].sort(), ['sending', 'waiting'], 'the first due went; the other waits')
  const waiting = held[stages.indexOf('waiting')]!
  t.equal(rawBroadcasts(devnet).length, 1, 'one broadcast')
  regain()
  await waitFor(async () => (await devnet.pass(), devnet.get(waiting.id)), (submission) => submission.stage === 'sending', 'the other sent once the key is back', 10_000, 5)
  await devnet.mine()
  await devnet.pass()
  t.same(await Promise.all(held.map(async ({ id }) => (await devnet.get(id)).stage)), ['done', 'done'])
})

t.test('a nonce filler is not broadcast once another process holds the key', async (t) => {
  const devnet = await startRunnerDevnet(t, { configure: (network) => ({ ...network, runner: { ...network.runner, stuckAfterMs: 300 } }) })
  const payer = await devnet.payer()
  const nonce = await devnet.client.getTransactionCount({ address: devnet.operator, blockTag: 'pending' })
  const byHand = await sendByHand(devnet, nonce)
  const a = await devnet.submit(payer)
  await devnet.pass()
  const sentA = await devnet.get(a.id)
  t.equal(sentA.transaction!.nonce, nonce + 1)
  await dropTransaction(devnet, byHand.hash)
  await devnet.store.takeRunnerKey(devnet.runnerKey)
  await waitFor(async () => Date.now(), (now) => now - sentA.transaction!.sentAt > devnet.network.runner.stuckAfterMs, 'stuck', 5_000, 20)
  const broadcastsBefore = rawBroadcasts(devnet).length
  await devnet.pass()
  t.equal(rawBroadcasts(devnet).length, broadcastsBefore, 'no filler broadcast')
  t.same(devnet.logged(/filled a nonce gap/), [])
  t.equal(devnet.logged(standDown).length, 1, 'the runner stood down instead')
  t.equal(devnet.logged(standDown)[0]!.current, 2)
  t.equal(await devnet.client.getTransactionCount({ address: devnet.operator, blockTag: 'pending' }), nonce, 'the gap is still there: the new owner fills it')
  // The test plays the new owner's part: the gap filled, the submission mined.
  await devnet.client.sendRawTransaction({ serializedTransaction: byHand.raw })
  await devnet.mine()
  devnet.allow(0, 1)
})
