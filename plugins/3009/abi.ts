import { authorizationStateAbi } from '../../core/plugin.ts'

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
  { type: 'function', name: 'name', stateMutability: 'view', inputs: [], outputs: [{ name: '', type: 'string' }] },
  // FiatToken v2's EIP-712 version; not part of ERC-20.
  { type: 'function', name: 'version', stateMutability: 'view', inputs: [], outputs: [{ name: '', type: 'string' }] },
  { type: 'function', name: 'DOMAIN_SEPARATOR', stateMutability: 'view', inputs: [], outputs: [{ name: '', type: 'bytes32' }] },
  {
    // ERC-5267, which newer tokens implement and FiatToken (v2.2 included) does not.
    type: 'function',
    name: 'eip712Domain',
    stateMutability: 'view',
    inputs: [],
    outputs: [
      { name: 'fields', type: 'bytes1' },
      { name: 'name', type: 'string' },
      { name: 'version', type: 'string' },
      { name: 'chainId', type: 'uint256' },
      { name: 'verifyingContract', type: 'address' },
      { name: 'salt', type: 'bytes32' },
      { name: 'extensions', type: 'uint256[]' },
    ],
  },
] as const
