import { authorizationStateAbi, tokenDomainAbi } from '../../core/plugin.ts'

/**
 * The EIP-3009 token functions Bruno reads or sends (FiatToken v2, i.e. USDC): the `(v, r, s)`
 * overload of `transferWithAuthorization` the runner uses, the authorization state, and what
 * tells the token's EIP-712 domain.
 *
 * @example
 * encodeFunctionData({ abi: eip3009Abi, functionName: 'transferWithAuthorization', args: [from, to, value, validAfter, validBefore, nonce, v, r, s] })
 */
export const eip3009Abi = [
  {
    type: 'function',
    name: 'transferWithAuthorization',
    stateMutability: 'nonpayable',
    inputs: [
      { name: 'from', type: 'address' },
      { name: 'to', type: 'address' },
      { name: 'value', type: 'uint256' },
      { name: 'validAfter', type: 'uint256' },
      { name: 'validBefore', type: 'uint256' },
      { name: 'nonce', type: 'bytes32' },
      { name: 'v', type: 'uint8' },
      { name: 'r', type: 'bytes32' },
      { name: 's', type: 'bytes32' },
    ],
    outputs: [],
  },
  ...authorizationStateAbi,
  // What tells the token's EIP-712 domain (ERC-5267, or FiatToken's name, version and DOMAIN_SEPARATOR).
  ...tokenDomainAbi,
] as const
