import type { FastifyBaseLogger } from 'fastify'
import { blameOf, reportFault } from '../chain/faults.ts'
import type { RegisteredTool } from '../registry.ts'
import { schemaProblems } from '../tool/schemaErrors.ts'
import type { ToolContext } from '../tool/tool.ts'
import { ErrorCode, JsonRpcError } from '../http/jsonrpc.ts'

/** A `CallToolResult` before the era adds its own fields. */
export type ToolOutcome =
  | { readonly isError: false; readonly structuredContent: unknown; readonly text: string }
  | { readonly isError: true; readonly text: string }

const MAX_REPORTED_ERRORS = 5

/**
 * Validates the arguments against the tool's TypeBox schema and runs the handler. What the caller
 * can fix (bad arguments, a refusal, a revert, a short payment: `blameOf` says `caller`) is an
 * `isError` outcome with the reason; a fault of the chain or of Bruno is not the caller's doing:
 * it is logged once with a correlation id and thrown as a JSON-RPC internal error (-32603) whose
 * message and `data` carry that id (MCP: tool execution errors vs protocol errors).
 */
export async function callTool(tool: RegisteredTool, args: unknown, context: ToolContext, log: FastifyBaseLogger): Promise<ToolOutcome> {
  if (!tool.check.Check(args)) return { isError: true, text: `Invalid arguments for ${tool.definition.name}: ${describeErrors(tool, args)}` }
  try {
    const output = await tool.definition.handler(args, context)
    return { isError: false, structuredContent: output, text: JSON.stringify(output) }
  } catch (error) {
    const blame = blameOf(error)
    if (blame.side === 'caller') {
      log.info({ tool: tool.definition.name, reason: blame.message }, 'tool refused')
      return { isError: true, text: blame.message }
    }
    throw internalError(reportFault(log, error, blame, { tool: tool.definition.name }))
  }
}

/**
 * A reported fault as MCP answers it: JSON-RPC -32603 with the correlation id in the message and in
 * `data` (`code` as REST names the kind: `chain_unavailable` or `internal`). HTTP 200, so clients
 * read it as the JSON-RPC error it is (SDK clients drop the body of a non-2xx answer).
 */
export function internalError(fault: { readonly side: 'chain' | 'bruno'; readonly correlationId: string; readonly message: string }): JsonRpcError {
  const code = fault.side === 'chain' ? 'chain_unavailable' : 'internal'
  return new JsonRpcError(ErrorCode.InternalError, fault.message, 200, { code, correlationId: fault.correlationId })
}

// The same words REST and JSON-RPC give (`schemaProblems`), each problem at its JSON pointer.
function describeErrors(tool: RegisteredTool, args: unknown): string {
  return schemaProblems(tool.check, args, MAX_REPORTED_ERRORS)
    .map((problem) => `${problem.path || '/'}: ${problem.message}`)
    .join('; ')
}
