import { Type, type TSchema } from '@sinclair/typebox'
import { formatUnits, maxUint256 } from 'viem'
import { Address as AddressSchema, BaseUnits, Calls, defineTool, encodeApprove, requireAddress, toBaseUnits, TokenAmount, TokenArgument, TokenInfo } from '../../core/plugin.ts'
import { erc20Token } from './token.ts'


/**
 * `erc20_approve`: encodes an allowance for the account to grant.
 *
 * @example
 * registry.addGroup({ name: 'erc20', order: 40, instructions, tools: [erc20Approve(app.bruno.chainArgument)] })
 */
export const erc20Approve = (chain: TSchema) =>
  defineTool({
    name: 'erc20_approve',
    title: 'Encode an ERC-20 approve',
    description:
      'Encodes approve(spender, amount) for the account to make (in calibur_batch); sends nothing. `amount`: whole ' +
      'units ("0" revokes) or "max" (2^256-1).',
    input: Type.Object(
      {
        chain,
        token: TokenArgument,
        spender: { ...AddressSchema, description: 'e.g. a router' },
        amount: Type.Union([TokenAmount, Type.Literal('max')]),
      },
      { additionalProperties: false },
    ),
    output: Type.Object(
      {
        calls: Calls,
        token: TokenInfo,
        spender: AddressSchema,
        amount: Type.String({ description: 'whole token units, or "max"' }),
        amountBaseUnits: BaseUnits,
      },
      { additionalProperties: false },
    ),
    annotations: { readOnlyHint: true, openWorldHint: true },
    handler: async (args, { networks }) => {
      // The schema admits only configured network names.
      const network = networks.get(args.chain as string)
      const spender = requireAddress(args.spender, 'spender')
      const token = await erc20Token(network, args.token)
      const amount = args.amount === 'max' ? maxUint256 : toBaseUnits(args.amount, token.decimals, token.symbol ?? token.address)
      return {
        calls: [encodeApprove({ token: token.address, spender, amount })],
        token,
        spender,
        amount: args.amount === 'max' ? 'max' : formatUnits(amount, token.decimals),
        amountBaseUnits: amount.toString(),
      }
    },
  })
