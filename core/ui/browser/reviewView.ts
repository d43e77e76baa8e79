import type { App } from '@modelcontextprotocol/ext-apps'
import { reviewOf, SIGNABLE_TOOLS, type ReviewedTool } from '../review.ts'
import type { PageContext } from '../context.ts'
import { el, reviewSection } from './dom.ts'
import { encodeSigningLink } from './signingLink.ts'

/**
 * The review view (`ui://bruno/review`): a prepare tool's result in words before anything is
 * signed, and for a batch a button that opens the signing page in the user's browser with the
 * prepared data in the link's fragment.
 */
export function showReviews(app: App, context: PageContext, root: HTMLElement): void {
  app.ontoolresult = ({ structuredContent, isError }) => {
    const tool = app.getHostContext()?.toolInfo?.tool.name ?? ''
    root.replaceChildren()
    if (isError || structuredContent === undefined) {
      root.append(el('p', 'note', 'Nothing to review: the tool refused (its words are in the conversation).'))
      return
    }
    const review = reviewOf(tool, structuredContent, context.chains, Date.now() / 1000)
    root.append(el('h1', '', 'Review before you sign'), reviewSection(review))
    if (review.problems.length === 0 && (SIGNABLE_TOOLS as readonly string[]).includes(tool)) {
      const button = el('button', '', 'Sign in your wallet')
      button.dataset.testid = 'sign'
      button.addEventListener('click', () => {
        const url = `${context.signPage}#${encodeSigningLink(tool as ReviewedTool, structuredContent)}`
        void app.openLink({ url })
      })
      root.append(button, el('p', 'note', 'Opens Bruno\'s signing page in your browser: your wallet signs there, and Bruno sends it. The link carries the batch; Bruno stores nothing.'))
    } else if (review.problems.length === 0) {
      root.append(el('p', 'note', 'Your wallet signs this typed data unchanged; the agent then submits it.'))
    }
  }
}
