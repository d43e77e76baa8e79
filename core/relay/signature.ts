import { hexToBigInt, isHex, size, slice, type Hex } from 'viem'
import { ToolError } from '../tool/tool.ts'

/** secp256k1's group order: a signature's r and s lie in [1, n − 1]. */
const CURVE_ORDER = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n

/** A 65-byte ECDSA signature read back: r, s and the y parity its last byte names. */
export interface SignatureParts {
  readonly r: Hex
  readonly s: Hex
  readonly yParity: 0 | 1
}

/**
 * Reads a 65-byte ECDSA signature as a client sent it (r ‖ s ‖ v), and refuses, naming `field`,
 * one no key could have made: another length, a last byte (v) other than 27/28 or 0/1, an r or s
 * of 0 or not below the curve's order. Read where the input is read, so that a library's
 * exception about it is never the server's fault.
 *
 * @example
 * readSignature('0x…1c', 'payment.signature') // { r: '0x…', s: '0x…', yParity: 1 }
 * readSignature('0x…05', 'payment.signature') // ToolError: payment.signature is not a valid ECDSA signature: its last byte (v) is 0x05; …
 */
export function readSignature(signature: string, field: string): SignatureParts {
  const invalid = (why: string) => new ToolError(`${field} is not a valid ECDSA signature: ${why}`)
  if (!isHex(signature, { strict: true }) || size(signature) !== 65) throw invalid('it must be 65 bytes of 0x-hex (r, s, v)')
  const v = Number(hexToBigInt(slice(signature, 64, 65)))
  if (![0, 1, 27, 28].includes(v)) throw invalid(`its last byte (v) is 0x${v.toString(16).padStart(2, '0')}; v must be 27/28 (0x1b/0x1c) or 0/1`)
  const [r, s] = [slice(signature, 0, 32), slice(signature, 32, 64)]
  for (const [name, part] of [['r', r], ['s', s]] as const) {
    const value = hexToBigInt(part)
    if (value === 0n || value >= CURVE_ORDER) throw invalid(`${name} is ${value === 0n ? '0' : 'not below the curve\'s order'}; it must be between 1 and the order of secp256k1`)
  }
  return { r, s, yParity: v === 1 || v === 28 ? 1 : 0 }
}
