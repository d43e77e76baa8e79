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
import { status, submissionProgress } from './status.ts'
import { submit } from './submit.ts'

const instructions =
  'bruno — the relay. `account` says whether an account is delegated to a delegate served here (delegateName) and what it holds. `quote` prices a ' +
  'call in a token. `submit` hands a paid call to the runner and answers at once with an id; `status` follows it ' +
  'to done. Bruno never holds a key: your wallet signs what the other groups prepare. The runner sends every call ' +
  'from Bruno\'s Runner contract, never from the account, so only calls that act by signature belong in `call`: ' +
  'calibur_execute\'s (the account\'s signed batch) or transfer_authorization_call\'s (a signed transfer). The ' +
  'payment is made first, in the same transaction as the call: a call that fails on chain still pays, so calls that ' +
  'fail in simulation are refused. Shapes: `payment` is {token, authorization, signature} (a signed EIP-3009 transfer ' +
  'to the payee: payment_authorization\'s `payment` and the wallet\'s signature) or {token, amountBaseUnits, batch} (a ' +
  'delegate execute tool\'s `payment` as returned: its signed payment-only batch pays first). `authorizationList` items are signed ' +
  'EIP-7702 authorizations {chainId, address, nonce, r, s, yParity and/or v} (viem\'s signAuthorization output, its ' +
  'bigint `v` sent as a number or string or left out: JSON has no bigint, and yParity suffices), nonce = the ' +
  'account\'s current EOA nonce: they delegate the account in the same transaction. A submission ' +
  '(submit\'s and status\'s result): `stage` waiting (stored, not sent; `reason` says why it is held), sending, ' +
  'confirming, done (check outcome.callSucceeded) or failed (`reason`); `transaction` once sent {hash, nonce, ' +
  'blockNumber, gasUsed, feeWei: what the runner paid}; `outcome` once included {paidBaseUnits, chargedBaseUnits ' +
  '(kept by the payee), refundedBaseUnits (sent back in the same transaction), callSucceeded, callReason}. `quote` returns `amount` (whole units) and `amountBaseUnits`, `payee`, `validUntil`, and the worst ' +
  'case it priced (gas, feePerGasWei, costWei).'

/**
 * The `bruno` group: account, quote, submit, status; the relay's resources (each network's
 * config, the spec, submissions); the workflow prompts, each served where its other groups are.
 */
export const brunoGroup = definePlugin({
  name: 'bruno',
  order: 10,
  setup: async ({ chainArgument, networks }) => ({
    instructions,
    tools: [account(chainArgument), quote(chainArgument), submit(chainArgument), status, submissionProgress],
    prompts: [payGasInToken, swapToEth, runBuilderCall, delegateAndRun],
    resources: [...networks.names.map((name) => networkConfigResource(networks.get(name).config)), await specResource()],
    resourceTemplates: [submissionResource],
  }),
})
