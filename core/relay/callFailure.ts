import { concat } from 'viem'
import type { RelayContext } from './context.ts'
import type { PaymentToken } from '../charge/gasPricer.ts'
import type { RequestedRelay } from './relayOfRequest.ts'
import { revertReason } from './revertReason.ts'

/**
 * Why a delegate batch's own calls fail, when the Runner could not see it (they left no revert data:
 * the batch ran out of gas, say): they are replayed as the account would run them alone after its
 * payment, at `blockNumber` (default latest), with the account delegated to the batch's delegate
 * (a state override: an account the relay's own transaction delegated has no code before it).
 * `undefined` when the replay does not fail or says nothing.
 *
 * @example
 * await describeCallFailure(context, requested, usdc) // 'the call reverted: Too little received'
 */
export async function describeCallFailure(context: RelayContext, requested: RequestedRelay, token: PaymentToken, blockNumber?: bigint): Promise<string | undefined> {
  const own = requested.batch?.ownCalls
  if (!own || requested.relay.form !== 'batch') return undefined
  const delegated = [{ address: requested.relay.account, code: concat(['0xef0100', requested.relay.delegate]) }]
  try {
    await context.network.client.call({
      account: own.from,
      to: own.to,
      data: own.data,
      stateOverride: delegated,
      ...(blockNumber === undefined ? { blockTag: 'latest' as const } : { blockNumber }),
    })
    return undefined
  } catch (error) {
    return revertReason(error, token.decimals, token.symbol, context.delegates)
  }
}
