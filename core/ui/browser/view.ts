import { App } from '@modelcontextprotocol/ext-apps'
import type { PageContext } from '../context.ts'
import { pageContext } from './dom.ts'
import { showReviews } from './reviewView.ts'
import { showSubmissions } from './statusView.ts'

/**
 * Both views' script (one bundle: ext-apps' `App` is most of it): the context the view was
 * served with says which one this document is.
 */
const context = pageContext<PageContext & { view: 'review' | 'status' }>()
const app = new App({ name: `bruno-${context.view}`, version: '1' })
const root = document.getElementById('root')!
if (context.view === 'review') showReviews(app, context, root)
else showSubmissions(app, context, root)
void app.connect()
