import { keccak256, serializeTransaction, type Address, type Hex, type SignedAuthorizationList } from 'viem'
import type { Network } from './networks.ts'

/** OP-stack's GasPriceOracle predeploy, the same address on every OP-stack chain. */
export const GAS_PRICE_ORACLE: Address = '0x420000000000000000000000000000000000000F'

const getL1FeeAbi = [
  { type: 'function', name: 'getL1Fee', stateMutability: 'view', inputs: [{ name: '_data', type: 'bytes' }], outputs: [{ name: '', type: 'uint256' }] },
] as const

/**
 * The L1 fee moves with L1's base fee between the read and the inclusion: a transaction is priced
 * at the oracle's answer plus this share, in basis points.
 */
export const L1_FEE_HEADROOM_BPS = 2_500n

/** The fields of the runner's transaction that its L1 data fee depends on. */
export interface UnsignedRunnerTransaction {
  readonly to: Address
  readonly data: Hex
  readonly gas: bigint
  readonly nonce: number
  readonly maxFeePerGas: bigint
  readonly maxPriorityFeePerGas: bigint
  readonly authorizationList?: SignedAuthorizationList
}

/**
 * The least nonce priced: submit and quote pass 0 (one byte), shorter than the runner's real nonce.
 * 4 bytes, none repeated (nothing for FastLZ to match): no runner nonce below 2³² encodes longer.
 */
const PRICED_NONCE = 0xfedcba98

/**
 * The runner's transaction as it will be signed, for pricing its L1 data fee and its size. Once it is
 * in flight the runner prices its signed bytes (core/runner/follow.ts, `l1FeeNow`): priced
 * shorter at submit, the least payment accepted would be cancelled at the first look. A placeholder
 * signature of full size stands in: yParity 1, r and s 32 bytes each with no leading zero, hashed
 * from the unsigned transaction — incompressible (OP-stack's oracle compresses with FastLZ since
 * Fjord), and not fixed, which a payer could repeat in its call's data to make it compress. The
 * nonce is at least `PRICED_NONCE`.
 *
 * @example
 * serializeAsSigned(8453, { to: runner, data, gas: 200_000n, nonce: 0, maxFeePerGas, maxPriorityFeePerGas }) // '0x02f9…' (+ 67 bytes of signature)
 */
export function serializeAsSigned(chainId: number, transaction: UnsignedRunnerTransaction): Hex {
  const unsigned = {
    chainId,
    to: transaction.to,
    data: transaction.data,
    gas: transaction.gas,
    nonce: Math.max(transaction.nonce, PRICED_NONCE),
    maxFeePerGas: transaction.maxFeePerGas,
    maxPriorityFeePerGas: transaction.maxPriorityFeePerGas,
    value: 0n,
    ...(transaction.authorizationList ? { type: 'eip7702' as const, authorizationList: transaction.authorizationList } : { type: 'eip1559' as const }),
  }
  const r = fullWord(keccak256(serializeTransaction(unsigned)))
  return serializeTransaction(unsigned, { r, s: fullWord(keccak256(r)), yParity: 1 })
}

/** A 32-byte word whose first byte is not 0 (the encoding trims leading zeros). */
function fullWord(word: Hex): Hex {
  return word.startsWith('0x00') ? `0x01${word.slice(4)}` : word
}

/**
 * The L1 data fee the chain will charge the runner for a transaction, with headroom: 0 on a
 * network that charges none, else OP-stack's `GasPriceOracle.getL1Fee` of the transaction as it will
 * be signed (`serializeAsSigned`: the same bytes the runner prices once it is in flight), read at
 * the latest block.
 *
 * @example
 * await readL1DataFee(base, { to: runner, data, gas: 200_000n, nonce: 7, maxFeePerGas, maxPriorityFeePerGas }) // 1_250_000_000_000n
 */
export async function readL1DataFee(network: Network, transaction: UnsignedRunnerTransaction): Promise<bigint> {
  if (network.config.l1DataFee !== 'op-stack') return 0n
  return readL1DataFeeOfBytes(network, serializeAsSigned(network.config.chainId, transaction))
}

/**
 * The L1 data fee, with headroom, of a transaction already encoded: signed (or `serializeAsSigned`),
 * which overstates it by its signature's bytes (the oracle allows for a signature beside what it is
 * given). 0 where the chain charges none.
 *
 * @example
 * await readL1DataFeeOfBytes(base, sent.raw) // 1_250_000_000_000n
 */
export async function readL1DataFeeOfBytes(network: Network, serialized: Hex): Promise<bigint> {
  if (network.config.l1DataFee !== 'op-stack') return 0n
  const fee = await network.client.readContract({ address: GAS_PRICE_ORACLE, abi: getL1FeeAbi, functionName: 'getL1Fee', args: [serialized], blockTag: 'latest' })
  return fee + (fee * L1_FEE_HEADROOM_BPS + 9_999n) / 10_000n
}
