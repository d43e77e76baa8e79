import type { App } from '@modelcontextprotocol/ext-apps'
import { submissionWords } from '../submission.ts'
import type { PageContext } from '../context.ts'
import { el } from './dom.ts'
import { SUBMISSION_PROGRESS_TOOL, POLL_MS } from './constants.ts'

/**
 * The status view (`ui://bruno/status`): a submission's stage, live. It polls the app-only tool
 * `submission_progress` (never shown to the model) until the submission is done or failed; `status`
 * where the host refuses that tool.
 */
export function showSubmissions(app: App, context: PageContext, root: HTMLElement): void {
  let token: string | undefined
  let polling = false

  app.ontoolinput = ({ arguments: args }) => {
    const payment = (args as { payment?: { token?: unknown } } | undefined)?.payment
    if (typeof payment?.token === 'string') token = payment.token
  }

  app.ontoolresult = ({ structuredContent, isError }) => {
    if (isError || structuredContent === undefined) {
      root.replaceChildren(el('p', 'note', 'No submission: the tool refused (its words are in the conversation).'))
      return
    }
    const finished = show(structuredContent)
    const id = (structuredContent as { id?: unknown }).id
    if (!finished && typeof id === 'string' && !polling) {
      polling = true
      void follow(id)
    }
  }

  /** Renders a submission; true once it is done or failed. */
  function show(submission: unknown): boolean {
    const chain = context.chains.find((known) => known.chain === (submission as { chain?: unknown }).chain)
    const words = submissionWords(submission, chain, token)
    const stage = el('p', 'stage', words.headline)
    stage.dataset.testid = 'stage'
    stage.dataset.stage = words.stage
    root.replaceChildren(el('h1', '', 'Your submission'), stage, el('ul', 'details', ...words.lines.map((line) => el('li', '', line))))
    return words.finished
  }

  async function follow(id: string): Promise<void> {
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, POLL_MS))
      // A host on MCP's 2025 revisions lists no app-only tool (SPEC §12) and may refuse it: then `status`.
      const result = await app
        .callServerTool({ name: SUBMISSION_PROGRESS_TOOL, arguments: { id } })
        .then((answer) => (answer.isError ? Promise.reject(answer) : answer))
        .catch(() => app.callServerTool({ name: 'status', arguments: { id } }))
        .catch(() => undefined)
      if (!result || result.isError || result.structuredContent === undefined) continue
      if (show(result.structuredContent)) return
    }
  }
}
