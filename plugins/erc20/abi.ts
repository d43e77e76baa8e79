/**
 * WETH9's `withdraw`: burns `wad` WETH of the caller and sends it as much native ETH.
 *
 * @example
 * encodeFunctionData({ abi: weth9Abi, functionName: 'withdraw', args: [10n ** 18n] })
 */
export const weth9Abi = [
  {
    type: 'function',
    name: 'withdraw',
    stateMutability: 'nonpayable',
    inputs: [{ name: 'wad', type: 'uint256' }],
    outputs: [],
  },
] as const
