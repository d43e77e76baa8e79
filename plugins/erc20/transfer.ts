import { Type, type TSchema } from '@sinclair/typebox'
import { formatUnits } from 'viem'
import { Address as AddressSchema, BaseUnits, Calls, defineTool, described, encodeTransfer, requireAddress, toBaseUnits, TokenAmount, TokenArgument, TokenInfo, ToolError } from '../../core/plugin.ts'
import { erc20Token } from './token.ts'


/**
 * `erc20_transfer`: encodes a token transfer for the account to make.
 *
 * @example
 * registry.addGroup({ name: 'erc20', order: 40, instructions, tools: [erc20Transfer(app.bruno.chainArgument)] })
 */
export const erc20Transfer = (chain: TSchema) =>
  defineTool({
    name: 'erc20_transfer',
    title: 'Encode an ERC-20 transfer',
    description:
      'Encodes transfer(to, amount) for the account to make (in calibur_batch); sends nothing. The tokens leave the ' +
      'account that makes the call: in flow 2, use transfer_authorization instead.',
    input: Type.Object(
      {
        chain,
        token: TokenArgument,
        to: AddressSchema,
        amount: TokenAmount,
      },
      { additionalProperties: false },
    ),
    output: Type.Object(
      {
        calls: Calls,
        token: TokenInfo,
        to: AddressSchema,
        amount: described(TokenAmount, 'whole token units'),
        amountBaseUnits: BaseUnits,
      },
      { additionalProperties: false },
    ),
    annotations: { readOnlyHint: true, openWorldHint: true },
    handler: async (args, { networks }) => {
      // The schema admits only configured network names.
      const network = networks.get(args.chain as string)
      const to = requireAddress(args.to, 'to')
      const token = await erc20Token(network, args.token)
      const amount = toBaseUnits(args.amount, token.decimals, token.symbol ?? token.address)
      if (amount === 0n) throw new ToolError('amount is 0: a transfer of nothing does nothing')
      return {
        calls: [encodeTransfer({ token: token.address, to, amount })],
        token,
        to,
        amount: formatUnits(amount, token.decimals),
        amountBaseUnits: amount.toString(),
      }
    },
  })
