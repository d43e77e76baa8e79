import type { SubmissionView, TaskState, ToolTaskSupport } from '../../core/plugin.ts'

/** How often a client polls when the chain's runner interval is not known (a chain no longer configured). */
const DEFAULT_POLL_MS = 1_000

/**
 * `submit` as a task (MCP Tasks extension): the task id is the submission id, and the task is
 * working until the submission is done (completed, with the final view) or failed (completed
 * with `isError` and the reason: the extension keeps `failed` for JSON-RPC errors). Submissions
 * are kept, so the task has no TTL.
 *
 * @example
 * defineTool({ name: 'submit', …, task: submissionTask })
 */
export const submissionTask: ToolTaskSupport<SubmissionView> = {
  idOf: (view) => view.id,
  state: async (id, { relay, networks }) => {
    const view = await relay.status(id)
    if (!view) return undefined
    const base = {
      createdAt: view.createdAt,
      updatedAt: view.updatedAt,
      ttlMs: null,
      // The runner looks for work this often: polling faster shows nothing new.
      pollIntervalMs: networks.names.includes(view.chain) ? networks.get(view.chain).config.runner.pollMs : DEFAULT_POLL_MS,
    }
    return { ...base, ...stateOf(view) }
  },
}

function stateOf(view: SubmissionView): Pick<TaskState, 'message'> & ({ status: 'working' } | { status: 'completed'; output: SubmissionView } | { status: 'completed'; refusal: string }) {
  switch (view.stage) {
    case 'done':
      return { status: 'completed', output: view, message: `done in ${view.transaction?.hash}` }
    case 'failed':
      return { status: 'completed', refusal: `submission ${view.id} failed: ${view.reason}`, message: `failed: ${view.reason}` }
    case 'waiting':
      return { status: 'working', message: view.reason ? `waiting to be sent: ${view.reason}` : 'waiting to be sent' }
    case 'sending':
      return { status: 'working', message: `sent as ${view.transaction?.hash}, waiting for inclusion` }
    case 'confirming':
      return { status: 'working', message: `included in block ${view.transaction?.blockNumber}, waiting for confirmations` }
  }
}
