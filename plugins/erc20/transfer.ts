import { Type, type TSchema } from '@sinclair/typebox'
import { formatUnits } from 'viem'
import { Address as AddressSchema, BaseUnits, Calls, defineTool, encodeTransfer, requireAddress, toBaseUnits, TokenAmount, TokenArgument, TokenInfo, ToolError } from '../../core/plugin.ts'
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
      'Encodes an ERC-20 transfer(to, amount) call; sends nothing. The call must run FROM the user\'s account ' +
      '(pass `calls` to calibur_batch, or have the account\'s wallet send it), never from Bruno: the tokens leave the ' +
      'account that makes the call. `token`: a configured symbol (e.g. "USDC") or a token address. `amount`: whole ' +
      'token units ("12.5"), more than 0. Returns `calls` ([{to, value, data}]), the token resolved (address, symbol, ' +
      'decimals) and the amount in base units.',
    input: Type.Object(
      {
        chain,
        token: TokenArgument,
        to: { ...AddressSchema, description: 'who receives the tokens' },
        amount: TokenAmount,
      },
      { additionalProperties: false },
    ),
    output: Type.Object(
      {
        calls: Calls,
        token: TokenInfo,
        to: AddressSchema,
        amount: Type.String({ description: 'the amount sent, in whole token units' }),
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
