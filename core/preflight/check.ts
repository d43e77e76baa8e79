import { BaseError } from 'viem'
import { ChainUnavailableError } from '../chain/guardedTransport.ts'
import { ToolError } from '../tool/tool.ts'

/** One named check of one chain: passed or not, and why. */
export interface PreflightCheck {
  readonly name: string
  readonly ok: boolean
  /** What was found (on a pass) or what is wrong (on a failure); never an RPC URL. */
  readonly detail: string
}

/** A failed check whose message is the reason: thrown by a check's body. */
export class CheckFailed extends Error {
  override readonly name = 'CheckFailed'
}

/**
 * Runs one check's body: its return value is the pass detail, a `CheckFailed` its reason. Any
 * other error fails the check with a message that cannot carry the RPC URL (ours, or viem's short
 * message, which names what failed and not the request).
 *
 * @example
 * await runCheck('runner balance', async () => `${formatEther(balance)} ETH`)
 */
export async function runCheck(name: string, body: () => Promise<string>): Promise<PreflightCheck> {
  try {
    return { name, ok: true, detail: await body() }
  } catch (error) {
    return { name, ok: false, detail: failureReason(error) }
  }
}

/**
 * A read a contract did not answer (it reverted, or returned nothing): `undefined`, for a check to
 * say what is missing. A chain that cannot be reached stays an error, and fails the check as one.
 *
 * @example
 * const domain = await client.readContract({ address, abi, functionName: 'eip712Domain' }).catch(notAnswered)
 * if (!domain) throw new CheckFailed(`${address} does not answer eip712Domain()`)
 */
export function notAnswered(error: unknown): undefined {
  for (let cause = error; cause instanceof Error; cause = cause.cause) {
    if (cause instanceof ChainUnavailableError) throw error
  }
  return undefined
}

function failureReason(error: unknown): string {
  if (error instanceof CheckFailed || error instanceof ToolError) return error.message
  for (let cause = error; cause instanceof Error; cause = cause.cause) {
    if (cause instanceof ChainUnavailableError) return cause.message
  }
  if (error instanceof BaseError) return error.shortMessage
  return 'the check failed unexpectedly'
}
