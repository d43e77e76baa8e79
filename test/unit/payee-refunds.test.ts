import t from 'tap'
import { encodeAbiParameters, getAddress } from 'viem'
import type { RelayContext } from '../../core/relay/context.ts'
import { payeeRefunds } from '../../core/relay/payeeRefunds.ts'
import { fakeClient, fakeNetwork, networkConfig } from './fakeChain.ts'

// payeeRefunds (core/relay/payeeRefunds.ts): whether the chain's payee is this Runner's PayeeVault,
// read once per chain and kept. Issue 44, point 8: keeping a read the node failed would make every
// later quote on the chain fail until a restart; a payee that answers nothing refunds nothing.

const config = networkConfig()

/** A node whose `eth_call` fails while `down`, then answers `runner()` with `runner`, or reverts. */
function payeeNode(answer: () => string) {
  const state = { down: true, calls: 0 }
  const { client } = fakeClient({
    eth_call: () => {
      state.calls++
      if (state.down) throw Object.assign(new Error('header not found'), { code: -32000 })
      return answer()
    },
  })
  // payeeRefunds reads only the network and its own cache of the context.
  return { state, context: { network: fakeNetwork(client, config) } as unknown as RelayContext }
}

t.test('a payee read the node failed is asked again; once known, it is kept', async (t) => {
  const { state, context } = payeeNode(() => encodeAbiParameters([{ type: 'address' }], [getAddress(config.runner.contract)]))
  await t.rejects(payeeRefunds(context), /header not found/, 'the node\'s failure, not an answer')
  state.down = false
  t.equal(await payeeRefunds(context), true, 'asked again: the payee is this Runner\'s vault')
  const calls = state.calls
  t.equal(await payeeRefunds(context), true)
  t.equal(state.calls, calls, 'kept: not asked a third time')
})

t.test('a payee that answers no runner() (an account, another contract) refunds nothing, and that is kept', async (t) => {
  const { state, context } = payeeNode(() => '0x')
  state.down = false
  t.equal(await payeeRefunds(context), false)
  t.equal(await payeeRefunds(context), false)
  t.equal(state.calls, 1, 'asked once')
})
