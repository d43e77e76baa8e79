import t from 'tap'
import type { Submission } from '../../core/store/store.ts'
import { startRunnerDevnet, type RunnerDevnet } from './runnerDevnet.ts'

// A node's pool keeps 16 pending transactions per sender (geth's txpool.accountslots, reth's max_account_slots), and the
// parity proxy refuses a 17th as reth does. The runner sends at most `runner.maxInFlight` (16) unincluded; the rest wait
// in turn, and a refusal of the pool's is a wait, never a failure.

const PAYERS = 18

/** `PAYERS` fresh payers, each submitting once; the submissions in arrival order. */
async function burst(devnet: RunnerDevnet): Promise<Submission[]> {
  const payers = []
  for (let index = 0; index < PAYERS; index++) payers.push(await devnet.payer())
  const submissions = []
  for (const payer of payers) submissions.push(await devnet.submit(payer))
  return submissions
}

async function stages(devnet: RunnerDevnet, submissions: readonly Submission[]) {
  return Promise.all(submissions.map((submission) => devnet.get(submission.id)))
}

t.test('16 unincluded: the 17th and 18th wait for a slot, in turn, and go once a block takes the others', async (t) => {
  const devnet = await startRunnerDevnet(t)
  t.equal(devnet.network.runner.maxInFlight, 16, 'the default: what a node keeps per sender')
  const submissions = await burst(devnet)
  const nonce = await devnet.client.getTransactionCount({ address: devnet.operator, blockTag: 'pending' })

  await devnet.pass()
  const first = await stages(devnet, submissions)
  t.same(first.map((each) => each.stage), [...Array(16).fill('sending'), 'waiting', 'waiting'], 'the first 16 in arrival order are sent')
  t.same(first.slice(0, 16).map((each) => each.transaction!.nonce), Array.from({ length: 16 }, (_, index) => nonce + index), 'at consecutive nonces')
  for (const waiting of first.slice(16)) {
    t.equal(waiting.reason, 'waiting: the runner has 16 transactions in flight, as many as a node\'s pool keeps per sender; this one goes when one is included')
    t.equal(waiting.transaction, undefined)
  }
  t.equal(devnet.proxy.refused.get('eth_sendRawTransaction'), 0, 'the node was never asked for a 17th')

  await devnet.mine()
  await devnet.pass()
  await devnet.pass()
  const second = await stages(devnet, submissions)
  t.same(second.slice(16).map((each) => [each.stage, each.transaction?.nonce]), [['sending', nonce + 16], ['sending', nonce + 17]], 'then the two, at the next nonces')
  await devnet.mine()
  await devnet.pass()
  t.same((await stages(devnet, submissions)).map((each) => each.stage), Array(PAYERS).fill('done'), 'every one done')
})

t.test('a runner allowed more than the node keeps: the node\'s refusal of the 17th is a wait, its nonce given back', async (t) => {
  const devnet = await startRunnerDevnet(t, { configure: (network) => ({ ...network, runner: { ...network.runner, maxInFlight: 32 } }) })
  const submissions = await burst(devnet)
  const nonce = await devnet.client.getTransactionCount({ address: devnet.operator, blockTag: 'pending' })

  await devnet.pass()
  const first = await stages(devnet, submissions)
  t.same(first.map((each) => each.stage), [...Array(16).fill('sending'), 'waiting', 'waiting'], '16 taken by the node; the 17th refused, the 18th not tried')
  t.equal(devnet.proxy.refused.get('eth_sendRawTransaction'), 1, 'one refusal')
  const full = 'waiting: the node\'s pool holds as many of the runner\'s transactions as it keeps (txpool is full); it goes when one is included'
  t.same(first.slice(16).map((each) => each.reason), [full, full], 'both wait in the node\'s words')
  t.equal(first[16]!.transaction, undefined, 'its transaction forgotten: the nonce is given back')

  await devnet.mine()
  await devnet.pass()
  const second = await stages(devnet, submissions)
  t.same(second.slice(16).map((each) => [each.stage, each.transaction?.nonce]), [['sending', nonce + 16], ['sending', nonce + 17]], 'both sent at the next nonces: no gap')
  await devnet.mine()
  await devnet.pass()
  const last = await stages(devnet, submissions)
  t.same(last.map((each) => each.stage), Array(PAYERS).fill('done'), 'none failed')
})

t.test('pass after pass with no block mined, a lane never has more than runner.maxInFlight unincluded; a block frees the slots', async (t) => {
  const devnet = await startRunnerDevnet(t, { configure: (network) => ({ ...network, runner: { ...network.runner, maxInFlight: 3 } }) })
  const payers = []
  for (let index = 0; index < 7; index++) payers.push(await devnet.payer())
  const submissions = []
  for (const payer of payers) submissions.push(await devnet.submit(payer))
  const nonce = await devnet.client.getTransactionCount({ address: devnet.operator, blockTag: 'pending' })
  const full = 'waiting: the runner has 3 transactions in flight, as many as a node\'s pool keeps per sender; this one goes when one is included'

  // The cap counts what earlier passes sent, not only what this pass sends.
  for (let pass = 1; pass <= 3; pass++) {
    await devnet.pass()
    const now = await stages(devnet, submissions)
    t.same(now.map((each) => each.stage), [...Array(3).fill('sending'), ...Array(4).fill('waiting')], `pass ${pass}: still three sent`)
    t.same(now.slice(3).map((each) => each.reason), Array(4).fill(full), `pass ${pass}: four wait for a slot`)
  }
  t.equal(await devnet.client.getTransactionCount({ address: devnet.operator, blockTag: 'pending' }), nonce + 3, 'the node holds three of the runner\'s')

  await devnet.mine()
  await devnet.pass()
  await devnet.pass()
  const after = await stages(devnet, submissions)
  t.same(after.slice(3).map((each) => [each.stage, each.transaction?.nonce]), [['sending', nonce + 3], ['sending', nonce + 4], ['sending', nonce + 5], ['waiting', undefined]], 'included, the three free slots go to the next three; the seventh waits')
  await devnet.pass()
  t.equal((await devnet.get(submissions[6]!.id)).stage, 'waiting', 'and still waits at the next pass')
  await devnet.mine()
  await devnet.pass()
  await devnet.pass()
  await devnet.mine()
  await devnet.pass()
  t.same((await stages(devnet, submissions)).map((each) => each.stage), Array(7).fill('done'), 'every one done')
})
