import type { FastifyPluginAsync } from 'fastify'
import { browserBundle } from './bundle.ts'
import { SIGN_PAGE_CSP, signPageHtml } from './pages.ts'
import { pageContextOf } from './views.ts'

/**
 * The signing page: `GET /sign` (the page; the batch travels in the link's fragment, which no
 * request carries) and `GET /sign/page.js` (its script). Served where the relay is (the `bruno`
 * group): the page submits through Bruno's own tools on `/mcp`. Nothing is stored.
 *
 * @example
 * await app.register(signPage)
 */
export const signPage: FastifyPluginAsync = async (app) => {
  const headers = {
    'content-security-policy': SIGN_PAGE_CSP,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'cache-control': 'no-store',
  }
  app.get('/sign', (request, reply) => {
    const context = pageContextOf({ ...app.bruno.services, origin: `${request.protocol}://${request.host}` })
    return reply.headers(headers).type('text/html; charset=utf-8').send(signPageHtml(context))
  })
  app.get('/sign/page.js', async (_request, reply) => reply.headers(headers).type('text/javascript; charset=utf-8').send(await browserBundle('signPage')))
}
