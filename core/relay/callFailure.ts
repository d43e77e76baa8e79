import type { RelayContext } from './context.ts'
import type { PaymentToken } from './gasPricer.ts'
import type { RequestedRelay } from './relayOfRequest.ts'
import { revertReason } from './revertReason.ts'

/**
 * Why a delegate batch's own calls fail, when the Runner could not see it (the delegate's outer batch
 * carries on past them): they are replayed as the account would run them alone, at `blockNumber`
 * (default latest). `undefined` when the replay does not fail or says nothing.
 *
 * @example
 * await describeCallFailure(context, requested, usdc) // 'the call reverted: Too little received'
 */
export async function describeCallFailure(context: RelayContext, requested: RequestedRelay, token: PaymentToken, blockNumber?: bigint): Promise<string | undefined> {
  const own = requested.batch?.ownCalls
  if (!own) return undefined
  try {
    await context.network.client.call({ account: own.from, to: own.to, data: own.data, ...(blockNumber === undefined ? { blockTag: 'latest' as const } : { blockNumber }) })
    return undefined
  } catch (error) {
    return revertReason(error, token.decimals, token.symbol, context.batchReaders.map((reader) => reader.errors))
  }
}
