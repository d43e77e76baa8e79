import { Type, type TSchema } from '@sinclair/typebox'
import { defineTool, STATUS_VIEW, SubmissionView, SubmitRequest } from '../../core/plugin.ts'
import { submissionTask } from './submissionTask.ts'

/**
 * `submit`: hands a paid call to Bruno's runner; answers at once with an id.
 *
 * @example
 * registry.addGroup({ name: 'bruno', …, tools: [submit(app.bruno.chainArgument), …] })
 */
export const submit = (chain: TSchema) =>
  defineTool({
    name: 'submit',
    title: 'Submit a paid call',
    description:
      'Hands a paid call to Bruno\'s runner; answers at once with an id for `status`. The call runs from Bruno\'s ' +
      'Runner contract, so only calls that act by signature belong there: calibur_execute\'s or ' +
      'transfer_authorization_call\'s `call`, never a builder\'s or helper\'s calls (wrap those with calibur_batch). ' +
      '`payment`: payment_authorization\'s plus the wallet\'s `signature`, or calibur_execute\'s. The payment is ' +
      'taken first and a call that fails on chain STILL PAYS: calls failing in simulation, and payments short of the ' +
      'worst case at current fees, are refused.',
    input: Type.Object({ chain, ...SubmitRequest.properties }, { additionalProperties: false }),
    output: SubmissionView,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    ui: { resourceUri: STATUS_VIEW },
    handler: async ({ chain: name, ...request }, { relay, client }) => relay.submit(name as string, request, client),
    task: submissionTask,
  })
