import { getAddress } from 'viem'
import { allowDelegatedPayers, definePlugin, type Network } from '../../core/plugin.ts'
import { caliburBatch } from './batch.ts'
import { placeCaliburStandIn } from './devnet.ts'
import { caliburExecute } from './execute.ts'
import { CALIBUR_ADDRESS, CaliburNetworkOptions } from './networkOptions.ts'
import { caliburDelegate } from './paymentFirstBatch.ts'
import { checkCalibur } from './preflight.ts'

const instructions =
  'calibur — batches for an account delegated to Calibur (EIP-7702; `account` says delegateName "Calibur"). Put the account\'s ' +
  'calls (helpers\' `calls`, builders\' transactions made with the account as fromAddress and recipient, never Bruno) ' +
  'and their `approvals` into calibur_batch: it adds the approvals that are short and a batch of its own that pays Bruno in ' +
  'a token (e.g. USDC), measured and priced (`gas`: the estimated limit, the owner path measured, the max fee per ' +
  'gas and margin it priced at). It returns two batches: paymentTypedData only pays, token.transfer(payee, amount), ' +
  'and runs first, in a call of its own; typedData runs the calls after it, all or nothing; if they fail on chain ' +
  'the payment is still taken. Pass each UNCHANGED to the account\'s wallet sign-typed-data tool ' +
  '(eth_signTypedData_v4; the account\'s own key: smart-wallet signers, ERC-1271 / ERC-6492, cannot sign them), ' +
  'then give both with their signatures to calibur_execute, and its {call, payment} ' +
  '(and authorizationList, if any) to submit; poll status until done. Never send a builder\'s or helper\'s call to ' +
  'submit as it is. An account not yet delegated is delegated in the same transaction: its wallet signs an EIP-7702 ' +
  'authorization to Calibur with nonce = its current EOA nonce (Bruno\'s runner sends the transaction, not the ' +
  'account), passed as authorizationList to calibur_batch, calibur_execute and submit. `deadline` (unix seconds) ' +
  'bounds the signed batches; `nonceKey` picks an independent nonce sequence.'

/**
 * The calibur group: calibur_batch (calls → typed data to sign) and calibur_execute (signed batches →
 * the call and payment for submit), for Calibur at its address on each chain (`networkOptions`:
 * Calibur's own by default); its preflight check; on the devnet, the stand-in at Calibur's address.
 *
 * @example
 * await buildApp({ config, groups: [caliburGroup], logger, serverInfo }) // serves it where config.groups names 'calibur'
 */
export const caliburGroup = definePlugin({
  name: 'calibur',
  order: 20,
  networkOptions: CaliburNetworkOptions,
  setup: ({ chainArgument, payment, networks }, _options, optionsOn) => {
    const caliburOn = (network: Network) => getAddress(optionsOn(network).address)
    // Flow 4's authorization names Calibur's address: said here, not learnt from a refusal.
    const addresses = networks.names.map((name) => `${name} ${caliburOn(networks.get(name))}`).join(', ')
    return {
      instructions: `${instructions} Calibur's address, an authorization's \`address\`: ${addresses} (each chain's bruno://<chain>/config lists its delegates).`,
      tools: [caliburBatch(chainArgument, caliburOn), caliburExecute(chainArgument, caliburOn)],
      delegate: caliburDelegate(payment, caliburOn),
    }
  },
  // The stand-in at Calibur's address; accounts delegated to it pay by signed transfer (its ERC-1271 is the account's own key).
  devnet: async (deployment) => {
    await placeCaliburStandIn(deployment)
    await allowDelegatedPayers(deployment, CALIBUR_ADDRESS)
    return {}
  },
  preflight: checkCalibur,
})
