/**
 * The ERC-20 functions the erc20 group encodes or reads, and nothing else: each helper encodes
 * the one call it names.
 *
 * @example
 * encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to, 1_000_000n] })
 */
export const erc20Abi = [
  {
    type: 'function',
    name: 'approve',
    stateMutability: 'nonpayable',
    inputs: [
      { name: 'spender', type: 'address' },
      { name: 'amount', type: 'uint256' },
    ],
    outputs: [{ name: '', type: 'bool' }],
  },
  {
    type: 'function',
    name: 'transfer',
    stateMutability: 'nonpayable',
    inputs: [
      { name: 'to', type: 'address' },
      { name: 'amount', type: 'uint256' },
    ],
    outputs: [{ name: '', type: 'bool' }],
  },
  {
    type: 'function',
    name: 'decimals',
    stateMutability: 'view',
    inputs: [],
    outputs: [{ name: '', type: 'uint8' }],
  },
] as const

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
