import {
  BaseError,
  ContractFunctionRevertedError,
  ContractFunctionZeroDataError,
  getAddress,
  hashDomain,
  type Address,
  type Client,
} from 'viem'
import { getChainId, readContract } from 'viem/actions'
import { ToolError } from '../tool/tool.ts'

/**
 * ERC-5267's `eip712Domain()`: a contract's own statement of the EIP-712 domain it checks
 * signatures under (newer tokens; Calibur, on a delegated account, with the account as
 * verifyingContract). FiatToken (v2.2 included) does not implement it.
 *
 * @example
 * const [fields, name, version] = await client.readContract({ address, abi: eip712DomainAbi, functionName: 'eip712Domain' })
 */
export const eip712DomainAbi = [
  {
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

/** What tells a token's EIP-712 domain: ERC-5267, else FiatToken's `name`, `version` (FiatToken v2's, not ERC-20's) and `DOMAIN_SEPARATOR`. */
export const tokenDomainAbi = [
  ...eip712DomainAbi,
  { type: 'function', name: 'name', stateMutability: 'view', inputs: [], outputs: [{ name: '', type: 'string' }] },
  { type: 'function', name: 'version', stateMutability: 'view', inputs: [], outputs: [{ name: '', type: 'string' }] },
  { type: 'function', name: 'DOMAIN_SEPARATOR', stateMutability: 'view', inputs: [], outputs: [{ name: '', type: 'bytes32' }] },
] as const

/** The EIP-712 domain a token with EIP-3009 signs under: name, version, chainId, verifyingContract (field bits 0x0f). */
const domainTypes = {
  EIP712Domain: [
    { name: 'name', type: 'string' },
    { name: 'version', type: 'string' },
    { name: 'chainId', type: 'uint256' },
    { name: 'verifyingContract', type: 'address' },
  ],
} as const

// ERC-5267 `fields` bits: name, version, chainId, verifyingContract — the domain EIP-3009 signs.
const tokenDomainFields = '0x0f'

/**
 * The EIP-712 name and version a token checks `transferWithAuthorization` signatures against: what
 * payment_authorization signs with, what preflight reports and what x402's `extra` carries.
 *
 * A token that implements ERC-5267 `eip712Domain()` states its domain outright, and that answer
 * is taken. FiatToken (USDC, v2.2 included) does not: its `name()` and `version()` are read, and
 * kept only if the domain they make hashes to the token's own `DOMAIN_SEPARATOR()` — `name()` is
 * the ERC-20 name, which a token may sign under a different one (bridged USDC variants do), and
 * a signature made for the wrong domain would be refused on chain after the wallet signed it.
 *
 * @example
 * await readTokenDomain(network.client, '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48') // { name: 'USD Coin', version: '2' }
 */
export async function readTokenDomain(client: Client, token: Address): Promise<{ name: string; version: string }> {
  const address = getAddress(token)
  let erc5267
  try {
    erc5267 = await readContract(client, { address, abi: tokenDomainAbi, functionName: 'eip712Domain' })
  } catch (error) {
    if (!answeredWithout(error)) throw error
  }
  if (erc5267) {
    const [fields, name, version, , verifyingContract, , extensions] = erc5267
    if (fields.toLowerCase() !== tokenDomainFields || extensions.length > 0 || getAddress(verifyingContract) !== address)
      throw new ToolError(
        `${address}'s EIP-712 domain (fields ${fields}, verifyingContract ${verifyingContract}) is not the ` +
          'name, version, chainId, token domain EIP-3009 signatures use',
      )
    return { name, version }
  }

  let name, version, separator, chainId
  try {
    ;[name, version, separator, chainId] = await Promise.all([
      readContract(client, { address, abi: tokenDomainAbi, functionName: 'name' }),
      readContract(client, { address, abi: tokenDomainAbi, functionName: 'version' }),
      readContract(client, { address, abi: tokenDomainAbi, functionName: 'DOMAIN_SEPARATOR' }),
      getChainId(client),
    ])
  } catch (error) {
    if (answeredWithout(error))
      throw new ToolError(`${address} has neither eip712Domain() nor name(), version() and DOMAIN_SEPARATOR(): not an EIP-3009 token Bruno can read`)
    throw error
  }
  const domain = { name, version, chainId: BigInt(chainId), verifyingContract: address }
  if (hashDomain({ domain, types: domainTypes }) !== separator)
    throw new ToolError(
      `${address}'s DOMAIN_SEPARATOR() is not the domain of its name() "${name}" and version() "${version}" on chain ${chainId}: ` +
        'its signatures use another domain, which Bruno cannot read',
    )
  return { name, version }
}

// The node answered and the token did not have the function (a revert, or no code answering).
// A transport or node failure is not the token's answer and is rethrown as is.
function answeredWithout(error: unknown): boolean {
  return (
    error instanceof BaseError &&
    Boolean(error.walk((cause) => cause instanceof ContractFunctionZeroDataError || cause instanceof ContractFunctionRevertedError))
  )
}
