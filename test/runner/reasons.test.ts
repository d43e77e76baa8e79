import t from 'tap'
import { simulating } from '../liveness/chaosProxy.ts'
import { startRunnerDevnet } from './runnerDevnet.ts'

// What a held submission says when the node fails on it: the node's own words, first line only, any
// URL struck out (an RPC URL is a secret), at most 300 characters; the log line has the whole error,
// scrubbed of the URLs Bruno was configured with.

t.test('a fault\'s reason: the node\'s first line, URLs struck out, 300 characters at most', async (t) => {
  const devnet = await startRunnerDevnet(t)
  const payer = await devnet.payer()
  const a = await devnet.submit(payer)
  const runner = devnet.network.runner.contract.slice(2)
  const words = `upstream https://user:secret@rpc.example.com/v2/key?x=1 and ws://10.0.0.1:8546 did not answer ${'x'.repeat(400)}`
  devnet.chaos.rule('fail the runner\'s simulation', (element) => simulating('')(element) && JSON.stringify(element.params).toLowerCase().includes(runner.toLowerCase()), { error: { code: -32000, message: `${words}\nsecond line` } })
  await devnet.pass()
  const held = await devnet.get(a.id)
  t.equal(held.stage, 'waiting')
  const expected = `waiting: ${`upstream [url] and [url] did not answer ${'x'.repeat(400)}`.slice(0, 300)}`
  t.equal(held.reason, expected)
  const faults = devnet.logged(/^submission held by a fault$/)
  t.equal(faults.length, 1, 'the fault is logged once')
  t.equal(faults[0]!.submission, a.id)
  t.notOk(JSON.stringify(devnet.logs).includes(devnet.chaos.url), 'no log line quotes the RPC URL Bruno was given (scrubbed)')
})
