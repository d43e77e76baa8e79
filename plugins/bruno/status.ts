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
    'The stage of a submission by the id submit returned: waiting (accepted, not sent yet; `reason` says why if it ' +
    'is held), sending (signed and broadcast), confirming (included, waiting for confirmations), done, or failed ' +
    '(with the reason). Once sent, `transaction` has the hash, nonce, block, gas used and the fee the runner paid. ' +
    'Poll until done or failed.',
  input: Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) }, { additionalProperties: false }),
  output: SubmissionView,
  annotations: { readOnlyHint: true, openWorldHint: false },
  handler: async ({ id }, { relay }) => {
    const found = await relay.status(id)
    if (!found) throw new ToolError(`unknown submission id "${id}"`)
    return found
  },
})
