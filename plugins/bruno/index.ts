import { definePlugin } from '../../core/plugin.ts'
import { account } from './account.ts'
import { delegateAndRun } from './prompts/delegateAndRun.ts'
import { payGasInToken } from './prompts/payGasInToken.ts'
import { runBuilderCall } from './prompts/runBuilderCall.ts'
import { swapToEth } from './prompts/swapToEth.ts'
import { quote } from './quote.ts'
import { networkConfigResource } from './resources/networkConfig.ts'
import { specResource } from './resources/spec.ts'
import { submissionResource } from './resources/submission.ts'
import { status } from './status.ts'
import { submit } from './submit.ts'

const instructions =
  'bruno — the relay. `account` says whether an account is delegated to Calibur and what it holds. `quote` prices a ' +
  'call in a token. `submit` hands a paid call to the runner and answers at once with an id; `status` follows it ' +
  'to done. Bruno never holds a key: your wallet signs what the other groups prepare. The payment is made first, in the ' +
  'same transaction as the call: a call that fails on chain still pays, so calls that fail in simulation are refused.'

/**
 * The `bruno` group: account, quote, submit, status; the relay's resources (each network's
 * config, the spec, submissions); the workflow prompts, each served where its other groups are.
 */
export const brunoGroup = definePlugin({
  name: 'bruno',
  order: 10,
  setup: async ({ chainArgument, networks }) => ({
    instructions,
    tools: [account(chainArgument), quote(chainArgument), submit(chainArgument), status],
    prompts: [payGasInToken, swapToEth, runBuilderCall, delegateAndRun],
    resources: [...networks.names.map((name) => networkConfigResource(networks.get(name).config)), await specResource()],
    resourceTemplates: [submissionResource],
  }),
})
