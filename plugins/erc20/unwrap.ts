import { Type, type TSchema } from '@sinclair/typebox'
import { encodeFunctionData, prepareEncodeFunctionData, formatEther, getAddress, type Address } from 'viem'
import { Address as AddressSchema, BaseUnits, Call, Calls, defineTool, toBaseUnits, TokenAmount, ToolError } from '../../core/plugin.ts'
import { weth9Abi } from './abi.ts'


// The selector is computed once, not hashed again on every call.
const withdrawFunction = prepareEncodeFunctionData({ abi: weth9Abi, functionName: 'withdraw' })
/**
 * The call `withdraw(wad)` on WETH9: the account turns `amount` wei of its WETH into native ETH.
 *
 * @example
 * encodeWethWithdraw({ weth: '0xC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2', amount: 10n ** 17n })
 * // { to: '0xC02a…6Cc2', value: '0', data: '0x2e1a7d4d…' }
 */
export function encodeWethWithdraw({ weth, amount }: { weth: Address; amount: bigint }): Call {
  return { to: weth, value: '0', data: encodeFunctionData({ ...withdrawFunction, args: [amount] }) }
}

/**
 * `weth_unwrap`: encodes a WETH withdrawal to native ETH on the network's configured WETH.
 *
 * @example
 * registry.addGroup({ name: 'erc20', order: 40, instructions, tools: [wethUnwrap(app.bruno.chainArgument)] })
 */
export const wethUnwrap = (chain: TSchema) =>
  defineTool({
    name: 'weth_unwrap',
    title: 'Encode a WETH unwrap',
    description:
      'Encodes withdraw(amount) on the network\'s WETH for the account to make (in calibur_batch); sends nothing. ' +
      'The account burns `amount` of its WETH (at most its balance, else it reverts) for as much ETH.',
    input: Type.Object(
      {
        chain,
        amount: TokenAmount,
      },
      { additionalProperties: false },
    ),
    output: Type.Object(
      {
        calls: Calls,
        weth: AddressSchema,
        amount: Type.String({ description: 'whole ETH' }),
        amountWei: BaseUnits,
      },
      { additionalProperties: false },
    ),
    annotations: { readOnlyHint: true, openWorldHint: false },
    handler: async (args, { networks }) => {
      // The schema admits only configured network names.
      const network = networks.get(args.chain as string)
      const weth = getAddress(network.config.weth)
      const amount = toBaseUnits(args.amount, 18, 'WETH')
      if (amount === 0n) throw new ToolError('amount is 0: unwrapping nothing does nothing')
      return {
        calls: [encodeWethWithdraw({ weth, amount })],
        weth,
        amount: formatEther(amount),
        amountWei: amount.toString(),
      }
    },
  })
