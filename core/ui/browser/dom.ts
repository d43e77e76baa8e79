import type { CallWords } from '../describe.ts'
import type { Review } from '../review.ts'

/**
 * An element whose children are elements or text nodes: nothing here ever parses HTML, so a token
 * symbol, a reason or a link's fragment is shown as the characters it is.
 */
export function el(tag: string, className: string, ...children: (Node | string)[]): HTMLElement {
  const element = document.createElement(tag)
  if (className) element.className = className
  for (const child of children) element.append(typeof child === 'string' ? document.createTextNode(child) : child)
  return element
}

/** The JSON the page was served with (`<script type="application/json" id="bruno-context">`). */
export function pageContext<T>(): T {
  const text = document.getElementById('bruno-context')?.textContent ?? '{}'
  return JSON.parse(text) as T
}

function callItem(words: CallWords, testId: string): HTMLElement {
  const item = el('li', words.unknown ? 'call unknown' : 'call', el('strong', 'title', words.title), el('ul', 'details', ...words.details.map((detail) => el('li', '', detail))))
  item.dataset.testid = testId
  return item
}

/**
 * A review as a person reads it: problems first, then chain and account, the payment, each call,
 * the deadline. The review view and the signing page both show a review through this.
 */
export function reviewSection(review: Review): HTMLElement {
  const section = el('section', 'review')
  if (review.problems.length > 0) {
    const problems = el('div', 'problems', el('strong', '', 'Do not sign: this does not add up'), el('ul', '', ...review.problems.map((problem) => el('li', '', problem))))
    problems.dataset.testid = 'problems'
    section.append(problems)
  }
  const facts = el(
    'dl',
    'facts',
    el('dt', '', 'Chain'),
    el('dd', '', review.chain),
    el('dt', '', 'Account'),
    el('dd', 'mono', review.account),
    el('dt', '', 'Valid until'),
    el('dd', '', review.deadline),
  )
  facts.dataset.testid = 'facts'
  section.append(facts)
  if (review.payment) {
    const payment = el('div', 'payment', el('h2', '', 'Payment for the gas'), el('ul', 'calls', callItem({ title: review.payment.title, details: review.payment.details }, 'payment')))
    section.append(payment)
  }
  if (review.calls.length > 0) {
    section.append(el('h2', '', review.payment ? 'Then your calls, all or nothing' : 'What you sign'), el('ol', 'calls', ...review.calls.map((call, index) => callItem(call, `call-${index}`))))
  }
  return section
}
