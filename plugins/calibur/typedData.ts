import { getAddress, isAddress, isHex, maxUint256, size, zeroAddress, zeroHash, type Address, type Hex, type TypedData } from 'viem'
import { ToolError } from '../../core/plugin.ts'

/**
 * Calibur's EIP-712 types, `EIP712Domain` (salt included) listed first: several signers refuse
 * typed data whose `types` lack the domain's own type.
 *
 * @example
 * hashStruct({ data: typedData.message, primaryType: 'SignedBatchedCall', types: caliburTypes })
 */
export const caliburTypes = {
  EIP712Domain: [
    { name: 'name', type: 'string' },
    { name: 'version', type: 'string' },
    { name: 'chainId', type: 'uint256' },
    { name: 'verifyingContract', type: 'address' },
    { name: 'salt', type: 'bytes32' },
  ],
  SignedBatchedCall: [
    { name: 'batchedCall', type: 'BatchedCall' },
    { name: 'nonce', type: 'uint256' },
    { name: 'keyHash', type: 'bytes32' },
    { name: 'executor', type: 'address' },
    { name: 'deadline', type: 'uint256' },
  ],
  BatchedCall: [
    { name: 'calls', type: 'Call[]' },
    { name: 'revertOnFailure', type: 'bool' },
  ],
  Call: [
    { name: 'to', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'data', type: 'bytes' },
  ],
} as const

/**
 * Calibur's EIP-712 name, the same on every chain and every account.
 *
 * @example
 * typedData.domain.name === caliburDomainName // true
 */
export const caliburDomainName = 'Calibur'

/**
 * Calibur's EIP-712 version (of the source the vector was produced from, v1.0.0 and later).
 *
 * @example
 * typedData.domain.version === caliburDomainVersion // true
 */
export const caliburDomainVersion = '1.0.0'

/** A call of a signed batch: wei as a decimal string, so it survives JSON unchanged. */
export type CaliburCall = { to: Address; value: string; data: Hex }

/** `BatchedCall`: the calls, and whether one failing reverts them all. */
export type CaliburBatch = { calls: CaliburCall[]; revertOnFailure: boolean }

/** The `SignedBatchedCall` message; its uint256 fields are decimal strings. */
export type SignedBatchedCallMessage = {
  batchedCall: CaliburBatch
  nonce: string
  keyHash: Hex
  executor: Address
  deadline: string
}

/**
 * What varies in an account's Calibur domain: the chain, the account (its `verifyingContract`)
 * and the salt, which the account's owner can change (`updateSalt`), so it is read, never assumed.
 */
export type CaliburDomain = { chainId: number; account: Address; salt: Hex }

/** Standard typed data, ready for `eth_signTypedData_v4` or viem's `signTypedData` as it is. */
export type CaliburTypedData = {
  domain: {
    name: typeof caliburDomainName
    version: typeof caliburDomainVersion
    chainId: number
    verifyingContract: Address
    salt: Hex
  }
  // Typed as any typed data's `types` (its value is `caliburTypes`): were it the literal type, viem
  // would demand bigints for the uint256 fields, where this message, made for JSON, has decimal
  // strings that viem reads just as well.
  types: TypedData
  primaryType: 'SignedBatchedCall'
  message: SignedBatchedCallMessage
}

/**
 * A call as Bruno's helpers return it (`core/tool/schemas.ts` `Call`, strings throughout) or with the
 * value as a bigint. Checked and normalized by the encoders: `to` checksummed, `data` lowercase,
 * `value` a canonical decimal string.
 */
export type CaliburCallInput = { readonly to: string; readonly value: bigint | string; readonly data: string }

/** What `caliburTypedData` builds the typed data from. */
export type CaliburTypedDataParameters = {
  domain: CaliburDomain
  batch: { readonly calls: readonly CaliburCallInput[]; readonly revertOnFailure: boolean }
  /** `key << 64 | seq` (see `caliburNonce`); seq must equal the account's `getSeq(key)`. */
  nonce: bigint
  /** Unix seconds after which the signature is refused; `0n` never expires. */
  deadline: bigint
  /** The only sender allowed to submit it; the zero address (default) lets anyone, the runner included. */
  executor?: Address
  /** The signing key; the zero hash (default) is the root key, the account's own secp256k1 key. */
  keyHash?: Hex
}

/**
 * The typed data an account's key signs to have `calls` executed by Calibur's signed `execute`.
 * Every uint256 of the message is a decimal string (`chainId` a number, as wallets expect it), so
 * the object passes through JSON and MCP unchanged; viem's `hashTypedData`/`signTypedData` and
 * `eth_signTypedData_v4` wallets read decimal strings as the numbers they spell.
 *
 * @example
 * caliburTypedData({
 *   domain: { chainId: 31337, account: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8', salt: '0x0000000000000000000000005fbdb2315678afecb367f032d93f642f64180aa3' },
 *   batch: { calls: [{ to: '0x1111111111111111111111111111111111111111', value: '0', data: '0x' }], revertOnFailure: true },
 *   nonce: 0n,
 *   deadline: 0n,
 * })
 * // { domain: { name: 'Calibur', version: '1.0.0', chainId: 31337, verifyingContract: '0x7099…79C8', salt: '0x…0aa3' },
 * //   types: { EIP712Domain: […], SignedBatchedCall: […], BatchedCall: […], Call: […] },
 * //   primaryType: 'SignedBatchedCall',
 * //   message: { batchedCall: { calls: [{ to: '0x1111…1111', value: '0', data: '0x' }], revertOnFailure: true },
 * //              nonce: '0', keyHash: '0x00…00', executor: '0x0000…0000', deadline: '0' } }
 */
export function caliburTypedData({
  domain,
  batch,
  nonce,
  deadline,
  executor = zeroAddress,
  keyHash = zeroHash,
}: CaliburTypedDataParameters): CaliburTypedData {
  return {
    domain: {
      name: caliburDomainName,
      version: caliburDomainVersion,
      chainId: chainIdOf(domain.chainId),
      verifyingContract: addressOf(domain.account, 'domain.account'),
      salt: bytes32Of(domain.salt, 'domain.salt'),
    },
    types: caliburTypes,
    primaryType: 'SignedBatchedCall',
    message: {
      batchedCall: {
        calls: batch.calls.map((call, index) => ({
          to: addressOf(call.to, `calls[${index}].to`),
          value: uint256Of(call.value, `calls[${index}].value`),
          data: bytesOf(call.data, `calls[${index}].data`),
        })),
        revertOnFailure: batch.revertOnFailure,
      },
      nonce: uint256Of(nonce, 'nonce'),
      keyHash: bytes32Of(keyHash, 'keyHash'),
      executor: addressOf(executor, 'executor'),
      deadline: uint256Of(deadline, 'deadline'),
    },
  }
}

/** The ERC-5267 answer as viem's `readContract` returns it for `eip712Domain()`. */
export type Eip712DomainResult = readonly [
  fields: Hex,
  name: string,
  version: string,
  chainId: bigint,
  verifyingContract: Address,
  salt: Hex,
  extensions: readonly bigint[],
]

// ERC-5267 `fields` bits: name, version, chainId, verifyingContract, salt — all five, as Calibur.
const caliburDomainFields = '0x1f'

/**
 * The Calibur domain an `eip712Domain()` answer describes, or a refusal when the answer is not
 * Calibur's (another delegate, another version, other fields): typed data built for the wrong
 * domain would be signed and then refused on chain.
 *
 * @example
 * caliburDomainFromEip712Domain(['0x1f', 'Calibur', '1.0.0', 31337n, '0x7099…79C8', '0x…0aa3', []])
 * // { chainId: 31337, account: '0x7099…79C8', salt: '0x…0aa3' }
 */
export function caliburDomainFromEip712Domain(result: Eip712DomainResult): CaliburDomain {
  const [fields, name, version, chainId, verifyingContract, salt, extensions] = result
  if (name !== caliburDomainName || version !== caliburDomainVersion)
    throw new ToolError(
      `the account's EIP-712 domain is "${name}" version "${version}", not ${caliburDomainName} ${caliburDomainVersion}: ` +
        'it is not delegated to a Calibur this version of Bruno knows',
    )
  if (fields.toLowerCase() !== caliburDomainFields || extensions.length > 0)
    throw new ToolError(
      `the account's EIP-712 domain has fields ${fields} and ${extensions.length} extensions; Calibur's has ` +
        `${caliburDomainFields} (name, version, chainId, verifyingContract, salt) and none`,
    )
  if (chainId > BigInt(Number.MAX_SAFE_INTEGER)) throw new ToolError(`the account's EIP-712 chainId ${chainId} is out of range`)
  return { chainId: Number(chainId), account: getAddress(verifyingContract), salt: bytes32Of(salt, 'salt') }
}

/**
 * A uint256 as a canonical decimal string. Takes a bigint or a string of decimal digits: hex,
 * signs, spaces and the empty string are refused rather than read the way `BigInt()` would read
 * them (`BigInt('')` is 0), so what a wallet shows is what is encoded.
 *
 * @example
 * uint256Of('007', 'value') // '7'
 * uint256Of(10n ** 18n, 'value') // '1000000000000000000'
 */
export function uint256Of(value: bigint | string, field: string): string {
  if (typeof value === 'string' && !/^[0-9]{1,78}$/.test(value))
    throw new ToolError(`${field} "${value}" is not a uint256 in decimal digits`)
  const number = BigInt(value)
  if (number < 0n || number > maxUint256) throw new ToolError(`${field} ${number} is out of the uint256 range`)
  return number.toString()
}

function chainIdOf(chainId: number): number {
  if (!Number.isSafeInteger(chainId) || chainId <= 0) throw new ToolError(`chainId ${chainId} is not a positive integer`)
  return chainId
}

// Lowercase is accepted as is; mixed case must carry a valid EIP-55 checksum (a wrong one means a
// mistyped address).
function addressOf(value: string, field: string): Address {
  if (!isAddress(value, { strict: true })) throw new ToolError(`${field} "${value}" is not an address (or its EIP-55 checksum is wrong)`)
  return getAddress(value)
}

function bytesOf(value: string, field: string): Hex {
  if (!isHex(value, { strict: true }) || value.length % 2 !== 0) throw new ToolError(`${field} is not 0x-prefixed whole bytes`)
  return value.toLowerCase() as Hex
}

function bytes32Of(value: string, field: string): Hex {
  const bytes = bytesOf(value, field)
  if (size(bytes) !== 32) throw new ToolError(`${field} is ${size(bytes)} bytes, not 32`)
  return bytes
}
