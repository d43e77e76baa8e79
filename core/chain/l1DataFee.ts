import { serializeTransaction, type Address, type Hex, type SignedAuthorizationList } from 'viem'
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
 * The L1 data fee the chain will charge the runner for a transaction, with headroom: 0 on a
 * network that charges none, else OP-stack's `GasPriceOracle.getL1Fee` of the unsigned
 * transaction (the oracle allows for the signature itself), read at the latest block.
 *
 * @example
 * await readL1DataFee(base, { to: runner, data, gas: 200_000n, nonce: 7, maxFeePerGas, maxPriorityFeePerGas }) // 1_250_000_000_000n
 */
export async function readL1DataFee(network: Network, transaction: UnsignedRunnerTransaction): Promise<bigint> {
  if (network.config.l1DataFee !== 'op-stack') return 0n
  const serialized = serializeTransaction({
    chainId: network.config.chainId,
    to: transaction.to,
    data: transaction.data,
    gas: transaction.gas,
    nonce: transaction.nonce,
    maxFeePerGas: transaction.maxFeePerGas,
    maxPriorityFeePerGas: transaction.maxPriorityFeePerGas,
    value: 0n,
    ...(transaction.authorizationList ? { type: 'eip7702' as const, authorizationList: transaction.authorizationList } : { type: 'eip1559' as const }),
  })
  return readL1DataFeeOfBytes(network, serialized)
}

/**
 * The L1 data fee, with headroom, of a transaction already encoded: a signed one's (for a transaction
 * in flight) slightly overstates it, by its signature's bytes. 0 where the chain charges none.
 *
 * @example
 * await readL1DataFeeOfBytes(base, sent.raw) // 1_250_000_000_000n
 */
export async function readL1DataFeeOfBytes(network: Network, serialized: Hex): Promise<bigint> {
  if (network.config.l1DataFee !== 'op-stack') return 0n
  const fee = await network.client.readContract({ address: GAS_PRICE_ORACLE, abi: getL1FeeAbi, functionName: 'getL1Fee', args: [serialized], blockTag: 'latest' })
  return fee + (fee * L1_FEE_HEADROOM_BPS + 9_999n) / 10_000n
}
