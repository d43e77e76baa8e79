import { Type } from '@sinclair/typebox'
import { defineTool, sameShapeAs, STATUS_VIEW, SubmissionView, ToolError } from '../../core/plugin.ts'

/**
 * `status`: a submission's stage, its transaction once sent, the reason when it failed.
 *
 * @example
 * registry.addGroup({ name: 'bruno', …, tools: [status, …] })
 */
export const status = defineTool({
  name: 'status',
  title: 'Status of a submission',
  description:
    // The stages are the output's enum, and the instructions say what each means.
    'A submission by submit\'s id: its stage, its transaction once sent, `reason` when held or failed. Poll until ' +
    'done or failed (done: check outcome.callSucceeded; a call that failed on chain still paid).',
  input: Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) }, { additionalProperties: false }),
  // submit's outputSchema already publishes the submission's shape: tools/list carries it once.
  output: sameShapeAs(SubmissionView, "submit's result", 'the submission'),
  annotations: { readOnlyHint: true, openWorldHint: false },
  ui: { resourceUri: STATUS_VIEW },
  handler: async ({ id }, { relay }) => {
    const found = await relay.status(id)
    if (!found) throw new ToolError(`unknown submission id "${id}"`)
    return found
  },
})

/**
 * `submission_progress`: `status` for the status view alone (MCP Apps `visibility: ["app"]`): the
 * view polls it until done, and the polling stays out of the model's context. Listed only to a
 * client that declares MCP Apps; callable by name on any path that serves `status`.
 *
 * @example
 * registry.addGroup({ name: 'bruno', …, tools: [status, submissionProgress, …] })
 */
export const submissionProgress = defineTool({
  name: 'submission_progress',
  title: 'Submission progress (for the status view)',
  description: 'status, for the status view: polled until done or failed.',
  input: status.input,
  output: status.output,
  annotations: { readOnlyHint: true, openWorldHint: false },
  ui: { resourceUri: STATUS_VIEW, visibility: ['app'] },
  handler: status.handler,
})
