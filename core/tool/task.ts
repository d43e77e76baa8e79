import type { ToolContext } from './tool.ts'

/**
 * Where a task-backed tool call stands now (MCP Tasks extension, `io.modelcontextprotocol/tasks`).
 * `working` carries a progress message; `completed` carries the tool's output (its result
 * then has `structuredContent`) or a refusal (its result is `isError: true` with that text).
 */
export type TaskState = {
  /** unix ms */
  readonly createdAt: number
  /** unix ms */
  readonly updatedAt: number
  /** How long the server keeps the task from its creation; `null`: for as long as it keeps anything. */
  readonly ttlMs: number | null
  readonly pollIntervalMs: number
  readonly message?: string
} & (
  | { readonly status: 'working' }
  | { readonly status: 'completed'; readonly output: unknown }
  | { readonly status: 'completed'; readonly refusal: string }
)

/**
 * A tool whose work goes on after it answers (a submission the runner still has to send). For a
 * caller that declares the Tasks extension, its result becomes a task: `idOf` names the task after
 * the output (so the task is as durable as what the output names), and `state` reads it again for
 * `tasks/get` (`undefined` for an id it does not know).
 *
 * @example
 * task: {
 *   idOf: (view) => view.id,
 *   state: async (id, { relay }) => stateOf(await relay.status(id)),
 * }
 */
export interface ToolTaskSupport<O> {
  readonly idOf: (output: O) => string
  readonly state: (id: string, context: ToolContext) => Promise<TaskState | undefined>
}
