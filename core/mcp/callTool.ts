import { BaseError } from 'viem'
import type { FastifyBaseLogger } from 'fastify'
import { ChainUnavailableError } from '../chain/guardedTransport.ts'
import type { RegisteredTool } from '../registry.ts'
import { schemaProblems } from '../schemaErrors.ts'
import { ToolError, type ToolContext } from '../tool.ts'

/** A `CallToolResult` before the era adds its own fields. */
export type ToolOutcome =
  | { readonly isError: false; readonly structuredContent: unknown; readonly text: string }
  | { readonly isError: true; readonly text: string }

const MAX_REPORTED_ERRORS = 5

/**
 * Validates the arguments against the tool's TypeBox schema and runs the handler. Everything the
 * caller can fix (bad arguments, a refusal, a revert, an unreachable chain) is an `isError`
 * outcome with the reason; only a fault of Bruno's own throws.
 */
export async function callTool(tool: RegisteredTool, args: unknown, context: ToolContext, log: FastifyBaseLogger): Promise<ToolOutcome> {
  if (!tool.check.Check(args)) return { isError: true, text: `Invalid arguments for ${tool.definition.name}: ${describeErrors(tool, args)}` }
  try {
    const output = await tool.definition.handler(args, context)
    return { isError: false, structuredContent: output, text: JSON.stringify(output) }
  } catch (error) {
    const reason = refusalReason(error)
    if (reason === undefined) throw error
    log.info({ tool: tool.definition.name, reason }, 'tool refused')
    return { isError: true, text: reason }
  }
}

// The same words REST and JSON-RPC give (`schemaProblems`), each problem at its JSON pointer.
function describeErrors(tool: RegisteredTool, args: unknown): string {
  return schemaProblems(tool.check, args, MAX_REPORTED_ERRORS)
    .map((problem) => `${problem.path || '/'}: ${problem.message}`)
    .join('; ')
}

/** The message for an error a caller can act on, or `undefined` for a fault of our own. */
function refusalReason(error: unknown): string | undefined {
  if (error instanceof ToolError) return error.message
  const unavailable = findCause(error, ChainUnavailableError)
  if (unavailable) return unavailable.message
  // viem's short messages say what failed ("The contract function "decimals" reverted.") and,
  // unlike its full messages, carry no request details such as the RPC URL.
  if (error instanceof BaseError) return error.shortMessage
  return undefined
}

function findCause<T extends Error>(error: unknown, type: abstract new (...args: never[]) => T): T | undefined {
  for (let current = error; current instanceof Error; current = current.cause) {
    if (current instanceof type) return current
  }
  return undefined
}
