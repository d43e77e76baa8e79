import type { RegisteredTool, RegistryView } from '../registry.ts'
import type { TaskState } from '../tool/task.ts'
import type { ToolContext } from '../tool/tool.ts'
import { ErrorCode, JsonRpcError } from '../http/jsonrpc.ts'
import { META } from './protocol.ts'

/** The Tasks extension's identifier, in client and server capabilities' `extensions`. */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks'

/**
 * Whether a modern request declares the Tasks extension in its own `clientCapabilities` (the era
 * is stateless: nothing a client declared on another request counts).
 *
 * @example
 * declaresTasks({ _meta: { 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } } } }) // true
 */
export function declaresTasks(params: Record<string, unknown>): boolean {
  const capabilities = (params._meta as Record<string, unknown> | undefined)?.[META.clientCapabilities] as { extensions?: unknown } | undefined
  const extensions = capabilities?.extensions
  if (typeof extensions !== 'object' || extensions === null) return false
  const tasks = (extensions as Record<string, unknown>)[TASKS_EXTENSION]
  return typeof tasks === 'object' && tasks !== null
}

/** The tools of a path that can answer with a task, in tool order. */
export function taskTools(view: RegistryView): RegisteredTool[] {
  return [...view.tools.values()].filter((tool) => tool.definition.task !== undefined)
}

/**
 * The `Task` fields of a state (`CreateTaskResult` and `tasks/get` add `resultType`). With
 * `detailed`, a completed task carries its `result`: the `CallToolResult` the call ends with.
 *
 * @example
 * taskFields('7f3a…', state, true)
 * // { taskId: '7f3a…', status: 'completed', createdAt: '2026-…Z', lastUpdatedAt: '…', ttlMs: null, pollIntervalMs: 1000,
 * //   result: { resultType: 'complete', content: [{ type: 'text', text: '{…}' }], structuredContent: {…} } }
 */
export function taskFields(taskId: string, state: TaskState, detailed: boolean): Record<string, unknown> {
  const fields: Record<string, unknown> = {
    taskId,
    status: state.status,
    ...(state.message ? { statusMessage: state.message } : {}),
    createdAt: new Date(state.createdAt).toISOString(),
    lastUpdatedAt: new Date(state.updatedAt).toISOString(),
    ttlMs: state.ttlMs,
    pollIntervalMs: state.pollIntervalMs,
  }
  if (detailed && state.status === 'completed') {
    fields.result =
      'refusal' in state
        ? { resultType: 'complete', content: [{ type: 'text', text: state.refusal }], isError: true }
        : { resultType: 'complete', content: [{ type: 'text', text: JSON.stringify(state.output) }], structuredContent: state.output }
  }
  return fields
}

/**
 * The task a `tasks/*` request names, asked of each task tool of the path in turn. Refused as the
 * extension says: `-32021` (HTTP 400) for a request that does not declare the extension, `-32602`
 * for a missing or unknown `taskId`.
 *
 * @example
 * await findTask(view, { taskId: '7f3a…', _meta: {…} }, context) // { taskId: '7f3a…', state: { status: 'working', … } }
 */
export async function findTask(view: RegistryView, params: Record<string, unknown>, context: ToolContext): Promise<{ taskId: string; state: TaskState }> {
  if (!declaresTasks(params)) {
    throw new JsonRpcError(ErrorCode.MissingRequiredClientCapability, 'Missing required client capability', 400, {
      requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } },
    })
  }
  const { taskId } = params
  if (typeof taskId !== 'string' || taskId === '') throw new JsonRpcError(ErrorCode.InvalidParams, 'Invalid params: "taskId" must be a string', 200)
  for (const tool of taskTools(view)) {
    const state = await tool.definition.task!.state(taskId, context)
    if (state) return { taskId, state }
  }
  throw new JsonRpcError(ErrorCode.InvalidParams, 'Failed to retrieve task: Task not found', 200)
}
