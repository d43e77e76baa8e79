import { Address, definePlugin, Type } from 'bruno/plugin'
import { getAddress } from 'viem'
import { simple7702Batch } from './batch.ts'
import { simple7702Delegate } from './delegate.ts'
import { deploySimple7702 } from './devnet.ts'
import { simple7702Execute } from './execute.ts'

const Options = Type.Object(
  {
    implementation: { ...Address, description: 'the Simple7702Account contract accounts delegate to (EIP-7702)' },
    gate: { ...Address, description: 'the RunnerGate (RunnerGate.sol) for this chain\'s Runner: the payment operation\'s paymaster, so that only the Runner runs it' },
  },
  { additionalProperties: false },
)

const instructions =
  'simple7702 — for an account delegated (EIP-7702) to eth-infinitism\'s Simple7702Account (ERC-4337, EntryPoint v0.8). ' +
  'simple7702_batch turns its calls into two UserOperations to sign with the account\'s own key (typed data, unchanged): ' +
  'the first only pays Bruno (its paymaster a RunnerGate: only Bruno\'s Runner can run it), the second runs the calls; simple7702_execute takes both signed and returns {call, payment} ' +
  'for submit. Bruno is the bundler: its Runner sends the payment operation to the EntryPoint first, then the calls.'

/**
 * A third party's delegate group, written against Bruno's exports only: an ERC-4337 7702 account
 * (Simple7702Account through EntryPoint v0.8), Bruno's Runner its own bundler, payment first.
 *
 * @example
 * // bruno.json
 * { "groups": ["bruno", "simple7702"], "plugins": [{ "from": "bruno-simple7702-group", "options": { "implementation": "0x…", "gate": "0x…" } }] }
 */
export default definePlugin({
  name: 'simple7702',
  order: 60,
  options: Options,
  setup: ({ chainArgument, payment }, options) => {
    const implementation = getAddress(options.implementation)
    const gate = getAddress(options.gate)
    return {
      instructions,
      tools: [simple7702Batch(chainArgument, implementation, gate), simple7702Execute(chainArgument, gate)],
      delegate: simple7702Delegate(payment, implementation, gate),
    }
  },
  devnet: deploySimple7702,
})
