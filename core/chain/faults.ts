import { randomBytes } from 'node:crypto'
import type { FastifyBaseLogger } from 'fastify'
import {
  BaseError,
  ContractFunctionRevertedError,
  ContractFunctionZeroDataError,
  ExecutionRevertedError,
  HttpRequestError,
  InsufficientFundsError,
  RawContractError,
  RpcRequestError,
  SocketClosedError,
  TimeoutError,
  UnknownRpcError,
  WebSocketRequestError,
} from 'viem'
import { ChainUnavailableError } from './guardedTransport.ts'
import { ToolError } from '../tool/tool.ts'

/**
 * A fault of Bruno's own that the code recognised (the runner cannot pay for gas…), with words
 * safe to give the caller: it is answered as an internal error, never as the caller's refusal.
 *
 * @example
 * throw new BrunoFault('the relay cannot pay for gas right now', { cause: error })
 */
export class BrunoFault extends Error {
  override readonly name = 'BrunoFault'
}

/**
 * Who an error is the fault of, and what to tell the caller:
 * - `caller`: a refusal the caller can act on (bad input, a call that reverts, short payment, an
 *   unknown id, an expired authorization); the message is their reason;
 * - `chain`: the chain's node did not answer, answered too late, or failed (HTTP error, timeout,
 *   garbage, a JSON-RPC error that is not a revert, the wrong chain);
 * - `bruno`: a fault of Bruno's own (a bug, the store, an unexpected answer).
 * No message quotes an RPC URL or a key.
 */
export type Blame =
  | { readonly side: 'caller'; readonly message: string }
  | { readonly side: 'chain' | 'bruno'; readonly message: string }

/**
 * The one rule that sorts what a tool or operation threw, used by MCP, REST and JSON-RPC alike:
 * 1. a `ToolError` is the caller's refusal;
 * 2. a chain that could not be reached (`ChainUnavailableError` anywhere in the causes) is the chain's;
 * 3. a `BrunoFault` is Bruno's;
 * 4. the caller's call reverting (`ContractFunctionRevertedError` with revert data or from a node
 *    that did not fail, `ExecutionRevertedError`, `RawContractError`), calling a function an
 *    address does not have (`ContractFunctionZeroDataError`), or an account short of ETH
 *    (`InsufficientFundsError`) is the caller's, in viem's short message (no request details);
 * 5. any other failure of the transport or the node (`HttpRequestError`, `TimeoutError`,
 *    WebSocket errors, a JSON-RPC error such as `InternalRpcError` or `LimitExceededRpcError`,
 *    an unknown RPC answer) is the chain's;
 * 6. anything else is Bruno's: never blamed on the caller.
 *
 * @example
 * blameOf(new ToolError('payment short: …')) // { side: 'caller', message: 'payment short: …' }
 * blameOf(new TypeError('x is undefined'))  // { side: 'bruno', message: 'Internal error' }
 */
export function blameOf(error: unknown): Blame {
  if (error instanceof ToolError) return { side: 'caller', message: error.message }
  const unavailable = findCause(error, (cause) => cause instanceof ChainUnavailableError) as ChainUnavailableError | undefined
  if (unavailable) return { side: 'chain', message: `${unavailable.message}; try again later` }
  if (error instanceof BrunoFault) return { side: 'bruno', message: error.message }
  if (error instanceof BaseError && callersOwn(error)) return { side: 'caller', message: error.shortMessage }
  const node = findCause(error, isNodeFailure)
  if (node) return { side: 'chain', message: `the chain's RPC failed to answer (${describeNodeFailure(node)}); try again later` }
  return { side: 'bruno', message: 'Internal error' }
}

/** A fault as answered: its side, the caller's message (carrying the id) and the id of its one log line. */
export interface ReportedFault {
  readonly side: 'chain' | 'bruno'
  readonly correlationId: string
  readonly message: string
}

/**
 * Logs a fault (not the caller's) in one line carrying a fresh correlation id, and returns what
 * to answer: the blame's message with the id, for the caller to quote. Bruno's own faults are
 * logged at `error` with the error and its stack; the chain's at `warn` with what failed. The
 * logger strikes out RPC URLs and keys wherever they appear in the line.
 *
 * @example
 * const fault = reportFault(request.log, error, blameOf(error), { tool: 'quote' })
 * // log: {"level":50,"correlationId":"5f0c…","tool":"quote",…,"msg":"fault answered as an internal error"}
 */
export function reportFault(log: FastifyBaseLogger, error: unknown, blame: Blame, fields: Record<string, unknown> = {}): ReportedFault {
  const side = blame.side === 'chain' ? 'chain' : 'bruno'
  const correlationId = randomBytes(8).toString('hex')
  if (side === 'chain') log.warn({ correlationId, ...fields, side, reason: blame.message, cause: describeError(error) }, 'fault of the chain answered as an internal error')
  else log.error({ correlationId, ...fields, side, err: error }, 'fault of Bruno answered as an internal error')
  return { side, correlationId, message: `${blame.message} (correlation id ${correlationId})` }
}

/** The caller's own failures among viem's errors (rule 4 of `blameOf`). */
function callersOwn(error: BaseError): boolean {
  const found = error.walk(
    (cause) =>
      cause instanceof ExecutionRevertedError ||
      cause instanceof RawContractError ||
      cause instanceof ContractFunctionZeroDataError ||
      cause instanceof InsufficientFundsError ||
      (cause instanceof ContractFunctionRevertedError && !nodeFailedInstead(cause)),
  )
  return found !== null
}

/**
 * viem reads a node's JSON-RPC internal error (-32603) as a revert (some nodes answer reverts so);
 * without revert data it is the node failing, not the call reverting.
 */
function nodeFailedInstead(reverted: ContractFunctionRevertedError): boolean {
  if (reverted.raw !== undefined || reverted.data !== undefined) return false
  if (findCause(reverted.cause, (cause) => isHexData((cause as { data?: unknown }).data))) return false
  return findCause(reverted.cause, (cause) => (cause as { code?: unknown }).code === -32603) !== undefined
}

function isNodeFailure(cause: unknown): boolean {
  return (
    cause instanceof RpcRequestError ||
    cause instanceof UnknownRpcError ||
    cause instanceof HttpRequestError ||
    cause instanceof TimeoutError ||
    cause instanceof WebSocketRequestError ||
    cause instanceof SocketClosedError ||
    // viem's RPC errors (InternalRpcError, LimitExceededRpcError, …) carry the node's code.
    (cause instanceof BaseError && cause.name.endsWith('RpcError') && typeof (cause as { code?: unknown }).code === 'number')
  )
}

/** A node's failure in words that carry nothing of the request: its kind and JSON-RPC code, never its URL or details. */
function describeNodeFailure(cause: unknown): string {
  const code = (cause as { code?: unknown }).code
  const name = cause instanceof Error ? cause.name : 'error'
  if (cause instanceof TimeoutError) return 'the request timed out'
  if (cause instanceof HttpRequestError) return cause.status ? `HTTP ${cause.status}` : 'it could not be reached'
  return typeof code === 'number' ? `${name}, JSON-RPC error ${code}` : name
}

/** For the chain's fault's log line: each cause's name and short message (viem's full messages quote the URL). */
function describeError(error: unknown): string {
  const parts: string[] = []
  for (let current = error; current instanceof Error && parts.length < 8; current = current.cause) {
    const short = current instanceof BaseError ? current.shortMessage : current.message
    const details = current instanceof BaseError && current.details && current.details !== short ? ` (${current.details})` : ''
    parts.push(`${current.name}: ${short}${details}`)
  }
  return parts.join(' <- ') || String(error)
}

function isHexData(data: unknown): boolean {
  return typeof data === 'string' && /^0x[0-9a-fA-F]*$/.test(data)
}

function findCause(error: unknown, match: (cause: unknown) => boolean): unknown {
  for (let current = error, depth = 0; current instanceof Error && depth < 32; current = current.cause, depth++) {
    if (match(current)) return current
  }
  return undefined
}
