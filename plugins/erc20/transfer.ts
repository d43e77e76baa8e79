import { Type, type TSchema } from '@sinclair/typebox'
import { encodeFunctionData, prepareEncodeFunctionData, formatUnits, type Address } from 'viem'
import { Address as AddressSchema, BaseUnits, Call, Calls, defineTool, requireAddress, toBaseUnits, TokenAmount, TokenArgument, TokenInfo, ToolError } from '../../core/plugin.ts'
import { erc20Abi } from './abi.ts'
import { erc20Token } from './token.ts'


// The selector is computed once, not hashed again on every call.
const transferFunction = prepareEncodeFunctionData({ abi: erc20Abi, functionName: 'transfer' })
/**
 * The call `transfer(to, amount)` on `token`: the account sends `amount` (base units) of its tokens.
 *
 * @example
 * encodeTransfer({ token: '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48', to: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8', amount: 1_000_000n })
 * // { to: '0xA0b8…eB48', value: '0', data: '0xa9059cbb…' }
 */
export function encodeTransfer({ token, to, amount }: { token: Address; to: Address; amount: bigint }): Call {
  return { to: token, value: '0', data: encodeFunctionData({ ...transferFunction, args: [to, amount] }) }
}

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
