/**
 * The SwapRouter02 functions `uniswap_swap_to_eth` encodes. `exactInput` is SwapRouter02's
 * (IV3SwapRouter: no deadline in its params, unlike the V3 periphery's SwapRouter).
 *
 * @example
 * encodeFunctionData({ abi: swapRouter02Abi, functionName: 'unwrapWETH9', args: [minimumOut, account] })
 */
export const swapRouter02Abi = [
  {
    type: 'function',
    name: 'multicall',
    stateMutability: 'payable',
    inputs: [{ name: 'data', type: 'bytes[]' }],
    outputs: [{ name: 'results', type: 'bytes[]' }],
  },
  {
    type: 'function',
    name: 'exactInput',
    stateMutability: 'payable',
    inputs: [
      {
        name: 'params',
        type: 'tuple',
        components: [
          { name: 'path', type: 'bytes' },
          { name: 'recipient', type: 'address' },
          { name: 'amountIn', type: 'uint256' },
          { name: 'amountOutMinimum', type: 'uint256' },
        ],
      },
    ],
    outputs: [{ name: 'amountOut', type: 'uint256' }],
  },
  {
    type: 'function',
    name: 'unwrapWETH9',
    stateMutability: 'payable',
    inputs: [
      { name: 'amountMinimum', type: 'uint256' },
      { name: 'recipient', type: 'address' },
    ],
    outputs: [],
  },
] as const

/**
 * QuoterV2's `quoteExactInput`. It is nonpayable (it runs the swap and reverts to read the
 * result), so it is simulated with `eth_call`, never sent.
 *
 * @example
 * const { result: [amountOut] } = await client.simulateContract({ address: quoterV2, abi: quoterV2Abi, functionName: 'quoteExactInput', args: [path, amountIn] })
 */
export const quoterV2Abi = [
  {
    type: 'function',
    name: 'quoteExactInput',
    stateMutability: 'nonpayable',
    inputs: [
      { name: 'path', type: 'bytes' },
      { name: 'amountIn', type: 'uint256' },
    ],
    outputs: [
      { name: 'amountOut', type: 'uint256' },
      { name: 'sqrtPriceX96AfterList', type: 'uint160[]' },
      { name: 'initializedTicksCrossedList', type: 'uint32[]' },
      { name: 'gasEstimate', type: 'uint256' },
    ],
  },
] as const

/**
 * The Uniswap V3 factory's pool lookup (the zero address when no pool exists).
 *
 * @example
 * await client.readContract({ address: factory, abi: uniswapV3FactoryAbi, functionName: 'getPool', args: [usdc, weth, 500] })
 */
export const uniswapV3FactoryAbi = [
  {
    type: 'function',
    name: 'getPool',
    stateMutability: 'view',
    inputs: [
      { name: 'tokenA', type: 'address' },
      { name: 'tokenB', type: 'address' },
      { name: 'fee', type: 'uint24' },
    ],
    outputs: [{ name: 'pool', type: 'address' }],
  },
] as const
