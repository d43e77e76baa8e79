import { completeChain, type ResourceTemplateDefinition } from '../../../core/plugin.ts'

/**
 * `bruno://{chain}/submissions/{id}`: a submission as `status` shows it. An id of another chain
 * names nothing. Private and never fresh: it is one caller's, and its stage moves.
 *
 * @example
 * await submissionResource.read({ chain: 'base', id: '7f3a…' }, context) // '{"id":"7f3a…","chain":"base","stage":"done",…}'
 */
export const submissionResource: ResourceTemplateDefinition = {
  uriTemplate: 'bruno://{chain}/submissions/{id}',
  name: 'submission',
  title: 'A submission',
  description: 'A submission by the id submit returned: the same view as the status tool (stage, transaction, reason).',
  mimeType: 'application/json',
  cache: { ttlMs: 0, scope: 'private' },
  complete: { chain: completeChain },
  read: async ({ chain, id }, { relay }) => {
    const view = await relay.status(id!)
    return view && view.chain === chain ? JSON.stringify(view) : undefined
  },
}
