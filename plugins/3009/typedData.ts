import { randomBytes } from 'node:crypto'
import { bytesToHex, isHex, maxUint256, size, type Address, type Hex, type TypedData } from 'viem'
import { readSignature, requireAddress, ToolError, transferWithAuthorizationTypes } from '../../core/plugin.ts'

/** EIP-3009's types (core's, which its x402 binding reads signatures with too). */
export { transferWithAuthorizationTypes }

/** The `TransferWithAuthorization` message; its uint256 fields are decimal strings. */
export type TransferWithAuthorizationMessage = {
  from: Address
  to: Address
  value: string
  validAfter: string
  validBefore: string
  nonce: Hex
}

/** Standard typed data, ready for `eth_signTypedData_v4` or viem's `signTypedData` as it is. */
export type TransferWithAuthorizationTypedData = {
  domain: { name: string; version: string; chainId: number; verifyingContract: Address }
  // Typed as any typed data's `types` (its value is `transferWithAuthorizationTypes`): were it the
  // literal type, viem would demand bigints where this JSON-ready message has decimal strings.
  types: TypedData
  primaryType: 'TransferWithAuthorization'
  message: TransferWithAuthorizationMessage
}

/** What `transferWithAuthorizationTypedData` builds the typed data from. */
export type TransferWithAuthorizationParameters = {
  /** The token and its EIP-712 name and version, as `readTokenDomain` reads them. */
  token: { address: Address; name: string; version: string; chainId: number }
  from: Address
  /** Who receives `value`: for a Bruno payment, the payee. */
  to: Address
  /** Base units (USDC: 6 decimals). */
  value: bigint
  /** Unix seconds; the transfer is valid strictly after `validAfter` and strictly before `validBefore`. */
  validAfter: bigint
  validBefore: bigint
  /** 32 bytes, unique per `from`; see `randomAuthorizationNonce`. */
  nonce: Hex
}

/**
 * The typed data `from` signs to let anyone move `value` of `token` to `to` with
 * `transferWithAuthorization`. uint256 fields are decimal strings (`chainId` a number), so the
 * object passes through JSON and MCP unchanged and any wallet signs it as it is.
 *
 * @example
 * transferWithAuthorizationTypedData({
 *   token: { address: '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48', name: 'USD Coin', version: '2', chainId: 1 },
 *   from: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
 *   to: '0x90F79bf6EB2c4f870365E785982E1f101E93b906',
 *   value: 1_250_000n,
 *   validAfter: 0n,
 *   validBefore: 1_900_000_000n,
 *   nonce: randomAuthorizationNonce(),
 * })
 * // { domain: { name: 'USD Coin', version: '2', chainId: 1, verifyingContract: '0xA0b8…eB48' },
 * //   types: { EIP712Domain: […], TransferWithAuthorization: […] }, primaryType: 'TransferWithAuthorization',
 * //   message: { from: '0x7099…79C8', to: '0x90F7…b906', value: '1250000', validAfter: '0', validBefore: '1900000000', nonce: '0x…' } }
 */
export function transferWithAuthorizationTypedData({
  token,
  from,
  to,
  value,
  validAfter,
  validBefore,
  nonce,
}: TransferWithAuthorizationParameters): TransferWithAuthorizationTypedData {
  if (!Number.isSafeInteger(token.chainId) || token.chainId <= 0) throw new ToolError(`chainId ${token.chainId} is not a positive integer`)
  for (const [field, number] of [['value', value], ['validAfter', validAfter], ['validBefore', validBefore]] as const)
    if (number < 0n || number > maxUint256) throw new ToolError(`${field} ${number} is out of the uint256 range`)
  // The token requires validAfter < now < validBefore: an empty window could only be refused.
  if (validBefore <= validAfter + 1n) throw new ToolError(`validBefore ${validBefore} leaves no second strictly between it and validAfter ${validAfter}`)
  if (!isHex(nonce, { strict: true }) || size(nonce) !== 32) throw new ToolError('nonce is not 32 bytes of 0x-hex')
  return {
    domain: {
      name: token.name,
      version: token.version,
      chainId: token.chainId,
      verifyingContract: requireAddress(token.address, 'token'),
    },
    types: transferWithAuthorizationTypes,
    primaryType: 'TransferWithAuthorization',
    message: {
      from: requireAddress(from, 'from'),
      to: requireAddress(to, 'to'),
      value: value.toString(),
      validAfter: validAfter.toString(),
      validBefore: validBefore.toString(),
      nonce: nonce.toLowerCase() as Hex,
    },
  }
}

/**
 * A fresh authorization nonce: 32 bytes from the OS's CSPRNG. EIP-3009 nonces are not
 * sequential, so a random one never collides with another pending authorization of `from`.
 *
 * @example
 * randomAuthorizationNonce() // '0x3f9c…e1a7' (32 bytes)
 */
export function randomAuthorizationNonce(): Hex {
  return bytesToHex(randomBytes(32))
}

// FiatToken's ECRecover refuses s in the upper half of the curve order (malleable signatures).
const secp256k1HalfOrder = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0n

/**
 * The `(v, r, s)` of a 65-byte signature for the `transferWithAuthorization(…, v, r, s)` overload,
 * `v` as 27 or 28 whichever way the signer wrote it (some write the recovery bit as 0/1). Refuses
 * what the token would: another length, or a high `s`.
 *
 * @example
 * authorizationSignatureParts('0x…1c') // { v: 28, r: '0x…', s: '0x…' }
 */
export function authorizationSignatureParts(signature: Hex): { v: 27 | 28; r: Hex; s: Hex } {
  const parsed = readSignature(signature, 'signature')
  if (BigInt(parsed.s) > secp256k1HalfOrder) throw new ToolError('the signature has a high s value, which the token refuses')
  return { v: parsed.yParity === 0 ? 27 : 28, r: parsed.r, s: parsed.s }
}
