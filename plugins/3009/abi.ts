import { authorizationStateAbi, tokenDomainAbi, transferWithAuthorizationAbi } from '../../core/plugin.ts'

/**
 * The EIP-3009 token functions Bruno reads or sends (FiatToken v2, i.e. USDC): the `(v, r, s)`
 * overload of `transferWithAuthorization` the runner uses, the authorization state, and what
 * tells the token's EIP-712 domain.
 *
 * @example
 * encodeFunctionData({ abi: eip3009Abi, functionName: 'transferWithAuthorization', args: [from, to, value, validAfter, validBefore, nonce, v, r, s] })
 */
export const eip3009Abi = [
  ...transferWithAuthorizationAbi,
  ...authorizationStateAbi,
  // What tells the token's EIP-712 domain (ERC-5267, or FiatToken's name, version and DOMAIN_SEPARATOR).
  ...tokenDomainAbi,
] as const
