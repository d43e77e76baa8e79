import { Type, type TSchema } from '@sinclair/typebox'
import { AccountView, Address, defineTool, requireAddress } from '../../core/plugin.ts'

/**
 * `account`: what Bruno sees of an account — delegated (to Calibur?), Calibur nonce, balances.
 *
 * @example
 * registry.addGroup({ name: 'bruno', …, tools: [account(app.bruno.chainArgument), …] })
 */
export const account = (chain: TSchema) =>
  defineTool({
    name: 'account',
    title: 'Read an account',
    description:
      'Reads an account on a chain: whether it is EIP-7702-delegated and to which contract (isCalibur: delegated to ' +
      'Calibur, so calibur_batch works for it), its Calibur batch nonce (key 0), its EOA nonce, and its ETH and ' +
      'configured-token balances (base units and whole units). An account that is not delegated can still use Bruno: ' +
      'pay with a signed USDC transfer (payment_authorization), or delegate in the same transaction (submit\'s authorizationList).',
    input: Type.Object({ chain, address: Address }, { additionalProperties: false }),
    output: AccountView,
    annotations: { readOnlyHint: true, openWorldHint: true },
    handler: async (args, { relay }) => relay.account(args.chain as string, requireAddress(args.address, 'address')),
  })
