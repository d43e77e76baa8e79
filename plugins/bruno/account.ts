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
      'Reads an account: delegated to what (delegateName, e.g. "Calibur", where a group here serves it), its nonces, its ETH ' +
      'and token balances. An undelegated account pays with a signed USDC transfer (payment_authorization) or ' +
      'delegates in the same transaction (authorizationList).',
    input: Type.Object({ chain, address: Address }, { additionalProperties: false }),
    output: AccountView,
    annotations: { readOnlyHint: true, openWorldHint: true },
    handler: async (args, { relay }) => relay.account(args.chain as string, requireAddress(args.address, 'address')),
  })
