import { maxUint256 } from 'viem'
import { ToolError } from '../../core/plugin.ts'

// A Calibur nonce is `key << 64 | seq`: the upper 192 bits pick one of many independent
// sequences (so unrelated batches need not wait on each other), the lower 64 bits are that
// sequence's next number, which `getSeq(key)` reads.
const seqBits = 64n
const maxSeq = (1n << seqBits) - 1n
const maxKey = (1n << 192n) - 1n

/**
 * The nonce of the `seq`-th batch on sequence `key`.
 *
 * @example
 * caliburNonce(0n, 5n) // 5n
 * caliburNonce(1n, 0n) // 18446744073709551616n (1n << 64n)
 */
export function caliburNonce(key: bigint, seq: bigint): bigint {
  if (key < 0n || key > maxKey) throw new ToolError(`nonce key ${key} does not fit in 192 bits`)
  if (seq < 0n || seq > maxSeq) throw new ToolError(`nonce seq ${seq} does not fit in 64 bits`)
  return (key << seqBits) | seq
}

/**
 * A Calibur nonce's sequence key (upper 192 bits) and number (lower 64 bits).
 *
 * @example
 * splitCaliburNonce((7n << 64n) | 3n) // { key: 7n, seq: 3n }
 */
export function splitCaliburNonce(nonce: bigint): { key: bigint; seq: bigint } {
  if (nonce < 0n || nonce > maxUint256) throw new ToolError(`nonce ${nonce} is out of the uint256 range`)
  return { key: nonce >> seqBits, seq: nonce & maxSeq }
}
