import { Type, type TSchema } from '@sinclair/typebox'
import { defineTool, SubmissionView, SubmitRequest } from '../../core/plugin.ts'
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
      'Gives Bruno\'s runner a call to send, with its payment, and answers at once with an id (poll `status`). ' +
      'The runner sends the call from Bruno\'s Runner contract, never from your account: `call` must be what ' +
      'calibur_execute returned (your account\'s signed Calibur batch), or a call that acts by signature (transfer_authorization_call\'s). A builder\'s ' +
      'transactionRequest or a helper\'s calls never go here as they are: wrap them with calibur_batch first. ' +
      'payment is {token, authorization, signature} (a signed EIP-3009 transfer to the payee, from payment_authorization) ' +
      'or {token, amount} with `call` a Calibur batch whose first call pays (calibur_execute\'s); a payment elsewhere in a ' +
      'call is refused. The payment is taken first, then the call runs: a call that fails on chain STILL PAYS (status ' +
      'shows outcome.callSucceeded false and why), so a call that fails in simulation is refused here, and the payment ' +
      'must cover the most the runner could pay (gas limit × max fee) at current fees. authorizationList takes signed ' +
      'EIP-7702 authorizations sent in the same transaction (to delegate an account to Calibur and run its batch at once).',
    input: Type.Object({ chain, ...SubmitRequest.properties }, { additionalProperties: false }),
    output: SubmissionView,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    handler: async ({ chain: name, ...request }, { relay, client }) => relay.submit(name as string, request, client),
    task: submissionTask,
  })
