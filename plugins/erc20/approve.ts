import { Type, type TSchema } from '@sinclair/typebox'
import { encodeFunctionData, prepareEncodeFunctionData, formatUnits, maxUint256, type Address } from 'viem'
import { Address as AddressSchema, BaseUnits, Call, Calls, defineTool, requireAddress, toBaseUnits, TokenAmount, TokenArgument, TokenInfo } from '../../core/plugin.ts'
import { erc20Abi } from './abi.ts'
import { erc20Token } from './token.ts'


// The selector is computed once, not hashed again on every call.
const approveFunction = prepareEncodeFunctionData({ abi: erc20Abi, functionName: 'approve' })
/**
 * The call `approve(spender, amount)` on `token`: the account lets `spender` move up to `amount`
 * (base units) of its tokens.
 *
 * @example
 * encodeApprove({ token: '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48', spender: '0x68b3465833fb72A70ecDF485E0e4C7bD8665Fc45', amount: 12_500_000n })
 * // { to: '0xA0b8…eB48', value: '0', data: '0x095ea7b3…' }
 */
export function encodeApprove({ token, spender, amount }: { token: Address; spender: Address; amount: bigint }): Call {
  return { to: token, value: '0', data: encodeFunctionData({ ...approveFunction, args: [spender, amount] }) }
}

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
      'Encodes an ERC-20 approve(spender, amount) call; sends nothing. The call must run FROM the user\'s account ' +
      '(pass `calls` to calibur_batch, or have the account\'s wallet send it), never from Bruno: it sets how much of ' +
      'the account\'s token `spender` may move. `token`: a configured symbol (e.g. "USDC") or a token address. ' +
      '`amount`: whole token units ("12.5"; "0" revokes) or "max" for an unlimited allowance (2^256-1). ' +
      'Returns `calls` ([{to, value, data}]), the token resolved (address, symbol, decimals) and the amount in base units.',
    input: Type.Object(
      {
        chain,
        token: TokenArgument,
        spender: { ...AddressSchema, description: 'who may move the account\'s tokens (e.g. a router)' },
        amount: Type.Union([TokenAmount, Type.Literal('max', { description: 'an unlimited allowance: 2^256-1 base units' })]),
      },
      { additionalProperties: false },
    ),
    output: Type.Object(
      {
        calls: Calls,
        token: TokenInfo,
        spender: AddressSchema,
        amount: Type.String({ description: 'the allowance in whole token units, or "max" (2^256-1 base units)' }),
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
