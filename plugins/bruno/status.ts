import { Type } from '@sinclair/typebox'
import { defineTool, SubmissionView, ToolError } from '../../core/plugin.ts'

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
    'A submission by submit\'s id: its stage (waiting, sending, confirming, then done or failed), its transaction ' +
    'once sent, `reason` when held or failed. Poll until done or failed. Done with outcome.callSucceeded false: the ' +
    'call failed on chain, and the payment was still taken.',
  input: Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) }, { additionalProperties: false }),
  output: SubmissionView,
  annotations: { readOnlyHint: true, openWorldHint: false },
  handler: async ({ id }, { relay }) => {
    const found = await relay.status(id)
    if (!found) throw new ToolError(`unknown submission id "${id}"`)
    return found
  },
})
