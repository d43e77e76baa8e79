import { hexToBigInt, type Block, type PublicClient } from 'viem'

/** Fee fields of an EIP-1559 transaction. */
export interface Fees {
  readonly maxFeePerGas: bigint
  readonly maxPriorityFeePerGas: bigint
}

/**
 * The fees the runner signs with: the node's suggested tip, and a max fee of the latest base fee
 * × 1.2 plus that tip (viem's rule: room for a block of rising base fee). Given the latest block,
 * one request (it joins the caller's JSON-RPC batch); without it, two in parallel.
 *
 * @example
 * await readFees(client, block) // { maxFeePerGas: 2_400_000_000n, maxPriorityFeePerGas: 1_000_000_000n }
 */
/**
 * The fee per gas a transaction signed with `fees` pays if the next block keeps the latest base fee:
 * that base fee (undone from `readFees`' max fee) plus the tip.
 *
 * @example
 * expectedFeePerGas({ maxFeePerGas: 2_400_000_000n, maxPriorityFeePerGas: 1_000_000_000n }) // 2_166_666_666n
 */
export function expectedFeePerGas(fees: Fees): bigint {
  return ((fees.maxFeePerGas - fees.maxPriorityFeePerGas) * 10n) / 12n + fees.maxPriorityFeePerGas
}

export async function readFees(client: PublicClient, block?: Promise<Block> | Block): Promise<Fees> {
  const [latest, tip] = await Promise.all([block ?? client.getBlock({ blockTag: 'latest' }), client.request({ method: 'eth_maxPriorityFeePerGas' })])
  const maxPriorityFeePerGas = hexToBigInt(tip)
  const baseFee = latest.baseFeePerGas ?? 0n
  return { maxFeePerGas: (baseFee * 12n) / 10n + maxPriorityFeePerGas, maxPriorityFeePerGas }
}
