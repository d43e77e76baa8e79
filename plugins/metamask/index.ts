import { allowDelegatedPayers, definePlugin } from '../../core/plugin.ts'
import { metaMaskBatch } from './batch.ts'
import { metaMaskContracts } from './contracts.ts'
import { metaMaskDelegate } from './delegate.ts'
import { deployMetaMaskDelegator } from './devnet.ts'
import { metaMaskExecute } from './execute.ts'
import { checkMetaMask } from './preflight.ts'

const instructions =
  'metamask — for an account delegated to MetaMask\'s EIP7702StatelessDeleGator v1.3.0 (`account` says delegateName ' +
  '"MetaMask"). Put the account\'s calls and `approvals` into metamask_batch, as for calibur_batch: it returns ONE ' +
  'Delegation to Bruno\'s Runner (typedData) whose one caveat pins two batches by hash — a payment to Bruno in a token, ' +
  'run first in a call of its own, then the calls in the same transaction, all or nothing, each once — and it ends at ' +
  '`deadline`. If the calls fail on chain the payment is still taken. Pass typedData UNCHANGED to the account\'s wallet ' +
  'sign-typed-data tool (the account\'s own key), then it, `batches` and the signature to metamask_execute, and its {call, payment} (and ' +
  'authorizationList, if any) to submit; poll status until done. Not yet delegated: the wallet signs an EIP-7702 ' +
  'authorization to MetaMask\'s delegator with nonce = its current EOA nonce, passed as authorizationList to ' +
  `metamask_batch, metamask_execute and submit. The delegator's address, an authorization's \`address\`, is ${metaMaskContracts.delegator} on every chain.`

/**
 * The metamask group: metamask_batch (calls → one payment-first Delegation to sign) and
 * metamask_execute (the signed delegation → the call and payment for submit).
 *
 * @example
 * await buildApp({ config, groups: [metaMaskGroup], logger, serverInfo }) // serves it where config.groups names 'metamask'
 */
export const metaMaskGroup = definePlugin({
  name: 'metamask',
  order: 25,
  setup: ({ chainArgument, payment }) => ({
    instructions,
    tools: [metaMaskBatch(chainArgument), metaMaskExecute(chainArgument)],
    delegate: metaMaskDelegate(payment),
  }),
  // Its contracts at their addresses on every chain MetaMask deployed them to; accounts delegated to its delegator pay
  // by signed transfer (its ERC-1271 is the account's own key). It takes no options.
  devnet: async (deployment) => {
    await deployMetaMaskDelegator(deployment)
    await allowDelegatedPayers(deployment, metaMaskContracts.delegator)
    return {}
  },
  preflight: checkMetaMask,
})
