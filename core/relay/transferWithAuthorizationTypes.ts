/**
 * EIP-3009's `TransferWithAuthorization` type and the token domain's type (no salt), listed in
 * `types` since several signers refuse typed data without it.
 *
 * @example
 * hashStruct({ data: typedData.message, primaryType: 'TransferWithAuthorization', types: transferWithAuthorizationTypes })
 */
export const transferWithAuthorizationTypes = {
  EIP712Domain: [
    { name: 'name', type: 'string' },
    { name: 'version', type: 'string' },
    { name: 'chainId', type: 'uint256' },
    { name: 'verifyingContract', type: 'address' },
  ],
  TransferWithAuthorization: [
    { name: 'from', type: 'address' },
    { name: 'to', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'validAfter', type: 'uint256' },
    { name: 'validBefore', type: 'uint256' },
    { name: 'nonce', type: 'bytes32' },
  ],
} as const
