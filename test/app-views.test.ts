import t from 'tap'
import { mkdir } from 'node:fs/promises'
import { build } from 'esbuild'
import { createPublicClient, createWalletClient, erc20Abi, getAddress, http, parseUnits, type Address, type PrivateKeyAccount } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { devnetChain } from '../core/devnet/chain.ts'
import type { Browser, Page } from 'playwright-core'
import { mintUsdc } from '../core/devnet/fund.ts'
import { encodeTransfer } from '../core/chain/erc20Calls.ts'
import { CALIBUR_ADDRESS } from '../plugins/calibur/networkOptions.ts'
import { metaMaskContracts } from '../plugins/metamask/contracts.ts'
import { SIGN_PAGE_CSP } from '../core/ui/pages.ts'
import { browserSkip, launchChromium } from './fixtures/browser.ts'
import { startDevnetBruno } from './fixtures/devnetBruno.ts'
import { postRaw, RawMcpClient } from './fixtures/mcpHttp.ts'

// Issue 47: the review view, the status view and the signing page in a real browser (Debian's
// Chromium through playwright-core). The views run inside a host frame driven by ext-apps' own
// AppBridge, fed real tool results from the devnet; the signing page signs with a wallet announced
// by EIP-6963 (a viem local account behind EIP-1193) and submits through Bruno's own tools.

const skip = browserSkip()
const SCREENSHOTS = new URL('../reports/screenshots/', import.meta.url)

const bruno = await startDevnetBruno(t, { groups: ['bruno', 'calibur', 'metamask', '3009', 'erc20', 'uniswap'] })
const { deployment } = bruno
const chain = devnetChain(deployment.chainId)
const transport = http(deployment.rpcUrl)
const client = createPublicClient({ chain, transport, pollingInterval: 50 })
const sponsor = createWalletClient({ account: privateKeyToAccount(deployment.deployer.privateKey), chain, transport })
const mcp = new RawMcpClient(bruno.mcpUrl)
// The host's own connection declares MCP Apps: it lists the app-only tool the status view polls.
const hostMcp = new RawMcpClient(bruno.mcpUrl, { extensions: { 'io.modelcontextprotocol/ui': { mimeTypes: ['text/html;profile=mcp-app'] } } })
const usdc = deployment.usdc
const router = getAddress(deployment.uniswap.swapRouter02)
const origin = bruno.server.url

async function delegatedAccount(delegate: Address = CALIBUR_ADDRESS): Promise<PrivateKeyAccount> {
  const account = privateKeyToAccount(generatePrivateKey())
  await mintUsdc(deployment.rpcUrl, deployment, account.address, parseUnits('50', 6))
  const authorization = await sponsor.signAuthorization({ account, contractAddress: delegate })
  const receipt = await client.waitForTransactionReceipt({ hash: await sponsor.sendTransaction({ to: sponsor.account.address, authorizationList: [authorization] }) })
  if (receipt.status !== 'success') throw new Error('delegation reverted')
  return account
}

/** A real calibur_batch (or metamask_batch): an approval Bruno adds, then a USDC transfer to `friend`. */
const prepare = (account: Address, friend: Address, tool = 'calibur_batch') =>
  mcp.call(tool, {
    chain: 'local',
    account,
    calls: [{ to: usdc, value: '0', data: encodeTransfer({ token: usdc, to: friend, amount: parseUnits('1.5', 6) }).data }],
    approvals: [{ token: 'USDC', spender: router, amountBaseUnits: '2000000' }],
    token: 'USDC',
  })

/** A calibur_batch signed by `account` and checked by calibur_execute: submit's `call` and `payment`. */
async function executedBatch(account: PrivateKeyAccount) {
  const batch = await prepare(account.address, privateKeyToAccount(generatePrivateKey()).address)
  const executed = await mcp.call('calibur_execute', {
    chain: 'local',
    paymentTypedData: batch.paymentTypedData,
    paymentSignature: await account.signTypedData(batch.paymentTypedData),
    typedData: batch.typedData,
    signature: await account.signTypedData(batch.typedData),
  })
  return { call: executed.call, payment: executed.payment }
}

const readView = async (uri: string): Promise<{ mimeType: string; text: string }> => {
  const reply = await hostMcp.request('resources/read', { uri }, uri)
  if (!reply.json.result) throw new Error(`resources/read ${uri}: ${reply.text}`)
  return reply.json.result.contents[0]
}

// One Chromium for the file, each test opening its own pages; not launched where the browser tests skip (nothing reads it there).
const browser = (skip ? undefined : await launchChromium(t)) as Browser

// The test host's page script, bundled as a host would ship it.
const hostScript = (await build({ entryPoints: [new URL('./fixtures/appHost.ts', import.meta.url).pathname], bundle: true, write: false, format: 'iife', platform: 'browser', logLevel: 'silent' })).outputFiles[0]!.text

/** A host page showing `tool`'s view with its result; the links the view opens, and the tools it called. */
async function host(page: Page, view: string, tool: string, args: Record<string, unknown>, result: unknown, refused: readonly string[] = []) {
  const links: string[] = []
  const called: string[] = []
  await page.exposeFunction('linkOpened', (url: string) => void links.push(url))
  await page.exposeFunction('callBruno', async (params: { name: string; arguments: Record<string, unknown> }) => {
    called.push(params.name)
    // As a host refuses a tool it did not list (a 2025 host: no app-only tools).
    if (refused.includes(params.name)) throw new Error(`the host does not know the tool ${params.name}`)
    return hostMcp.callTool(params.name, params.arguments)
  })
  await page.setContent('<!doctype html><html><body style="margin:0"></body></html>')
  await page.addScriptTag({ content: hostScript })
  const { text } = await readView(view)
  await page.evaluate(([html, tool, args, result]) => window.showView(html as string, tool as string, args as never, result), [text, tool, args, result] as const)
  return { links, called, frame: page.frameLocator('[data-testid=view]') }
}

/** A page with one wallet announced by EIP-6963, backed by `account` (viem) in the test. */
async function walletPage(page: Page, account: PrivateKeyAccount): Promise<string[]> {
  const asked: string[] = []
  await page.exposeFunction('walletRequest', async (method: string, params: unknown[]) => {
    asked.push(method)
    if (method === 'eth_requestAccounts' || method === 'eth_accounts') return [account.address]
    if (method === 'eth_signTypedData_v4') return account.signTypedData(JSON.parse(params[1] as string))
    throw Object.assign(new Error(`the test wallet does not do ${method}`), { code: 4200 })
  })
  // A string, not a function: the page must get the script as written (no transpiler helpers).
  await page.addInitScript(`{
    const provider = { request: ({ method, params }) => window.walletRequest(method, params ?? []) }
    const detail = Object.freeze({ info: { uuid: '5f8b2f1e-0000-4000-8000-000000000047', name: 'Test Wallet', icon: 'data:image/svg+xml,<svg xmlns="http://www.w3.org/2000/svg"/>', rdns: 'org.bruno.test' }, provider })
    const announce = () => window.dispatchEvent(new CustomEvent('eip6963:announceProvider', { detail }))
    window.addEventListener('eip6963:requestProvider', announce)
    announce()
  }`)
  return asked
}

const REVIEWED = ['calibur_batch', 'metamask_batch', 'payment_authorization', 'transfer_authorization']

t.test('MCP Apps on the wire: what a host without the extension sees is the tools it saw, plus `_meta.ui`', async (t) => {
  const plain = await mcp.listTools()
  const withApps = await hostMcp.listTools()
  t.notOk(plain.some((tool) => tool.name === 'submission_progress'), 'no app-only tool for a client that does not declare MCP Apps')
  const progress = withApps.find((tool) => tool.name === 'submission_progress')
  t.same(progress?._meta, { ui: { resourceUri: 'ui://bruno/status', visibility: ['app'] } }, 'the app-only tool, for a host that does')
  t.same(withApps.filter((tool) => tool.name !== 'submission_progress'), plain, 'every other tool as the plain list has it')
  const views = Object.fromEntries(plain.filter((tool) => tool._meta).map((tool) => [tool.name, tool._meta.ui.resourceUri]))
  t.same(views, { ...Object.fromEntries(REVIEWED.map((name) => [name, 'ui://bruno/review'])), submit: 'ui://bruno/status', status: 'ui://bruno/status' }, 'the prepare tools name the review, submit and status the status view; no other tool has _meta')
  const bytes = (tools: any[]) => Buffer.byteLength(JSON.stringify(tools))
  const without = plain.map(({ _meta, ...tool }) => tool)
  t.comment(`tools/list on /mcp: ${bytes(plain)} bytes, ${bytes(plain) - bytes(without)} of them the _meta keys; with the extension ${bytes(withApps)}`)

  const legacy = await postRaw(bruno.mcpUrl, { jsonrpc: '2.0', id: 1, method: 'tools/list' })
  t.notOk(legacy.json.result.tools.some((tool: any) => tool.name === 'submission_progress'), 'a 2025 client\'s list (no capabilities on the request) has no app-only tool')
  const call = await postRaw(bruno.mcpUrl, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'submission_progress', arguments: { id: 'nope' } } })
  t.same(call.json.result.content[0].text, 'unknown submission id "nope"', 'yet the app-only tool answers by name, in either era (a view\'s host may speak 2025)')

  const resources = await mcp.request('resources/list')
  t.notOk(resources.json.result.resources.some((resource: any) => resource.uri.startsWith('ui://')), 'views stay out of resources/list')
  const review = await readView('ui://bruno/review')
  t.equal(review.mimeType, 'text/html;profile=mcp-app', 'a view is MCP Apps\' HTML')
  const context = JSON.parse(/<script type="application\/json" id="bruno-context">(.*?)<\/script>/.exec(review.text)![1]!)
  t.equal(context.signPage, `${origin}/sign`, 'the signing page on the origin the host reached Bruno at')
  t.same(context.chains.map((chain: any) => [chain.chain, chain.chainId, chain.runner]), [['local', deployment.chainId, getAddress(bruno.config.networks[0]!.runner.contract)]], 'the deployment\'s own contracts, from its config')
  const discover = await mcp.request('server/discover')
  t.same(discover.json.result.capabilities.extensions['io.modelcontextprotocol/ui'], {}, 'server/discover names the extension')

  const page = await fetch(`${origin}/sign`)
  t.equal(page.headers.get('content-security-policy'), SIGN_PAGE_CSP, 'the signing page\'s own CSP')
  const html = await page.text()
  t.same(html.match(/<script[^>]*>/g), ['<script type="application/json" id="bruno-context">', '<script type="module" src="/sign/page.js">'], 'no inline script: its context is data, its code /sign/page.js')
  const script = await fetch(`${origin}/sign/page.js`)
  t.equal(script.headers.get('content-type'), 'text/javascript; charset=utf-8', 'the script, as a script')
})

const texts = (locator: { allTextContents(): Promise<string[]> }) => locator.allTextContents()

t.test('a calibur_batch reviewed in a host frame, signed on the signing page, done on the devnet', { skip }, async (t) => {
  await mkdir(SCREENSHOTS, { recursive: true })
  const account = await delegatedAccount()
  const friend = privateKeyToAccount(generatePrivateKey()).address
  const batch = await prepare(account.address, friend)

  const viewPage = await browser.newPage({ viewport: { width: 680, height: 600 } })
  const { links, frame } = await host(viewPage, 'ui://bruno/review', 'calibur_batch', {}, { content: [{ type: 'text', text: JSON.stringify(batch) }], structuredContent: batch })
  await frame.locator('[data-testid=payment]').waitFor()
  t.equal(await frame.locator('[data-testid=payment] .title').textContent(), `Pay Bruno at most ${batch.payment.amount} USDC`, 'the payment: the most it can take, in USDC')
  t.match((await texts(frame.locator('[data-testid=payment] .details li'))).join('\n'), new RegExp(`^expected at today's fees: ${Number(batch.payment.expectedChargeBaseUnits) / 1e6} USDC\\nBruno keeps what the runner's gas costs plus ${bruno.config.networks[0]!.margins.markupBps / 100} %\\nthe rest of the USDC comes back`), 'what it expects to charge, what is kept, and that the rest comes back')
  t.same(
    await texts(frame.locator('ol.calls > li > .title')),
    [`Allow ${router.slice(0, 8)}…${router.slice(-4)} (Uniswap SwapRouter02) to spend 2 USDC`, 'Send 1.5 USDC'],
    'each call decoded: the approval Bruno added, then the transfer',
  )
  t.same(await texts(frame.locator('[data-testid=call-1] .details li')), [`to ${friend.slice(0, 8)}…${friend.slice(-4)}`], 'the transfer names its recipient')
  const facts = await texts(frame.locator('[data-testid=facts] dd'))
  t.equal(facts[0], 'local (chain id 31337)', 'the chain')
  t.equal(facts[1], account.address, 'the account')
  t.match(facts[2], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(in \d+ min\)$/, 'the deadline, and how far off')
  t.equal(await frame.locator('[data-testid=problems]').count(), 0, 'nothing that does not add up')
  await viewPage.locator('[data-testid=view]').screenshot({ path: new URL('review-view.png', SCREENSHOTS).pathname })

  await frame.locator('[data-testid=sign]').click()
  await waitUntil(() => links.length > 0, 'the view opened a link')
  t.match(links[0], new RegExp(`^${origin}/sign#v1\\.[A-Za-z0-9_-]+$`), 'the link is the signing page, the batch in its fragment')

  const signPage = await browser.newPage({ viewport: { width: 680, height: 900 } })
  const asked = await walletPage(signPage, account)
  const response = await signPage.goto(links[0]!)
  t.equal(response?.headers()['content-security-policy'], SIGN_PAGE_CSP, 'the page carries its own CSP')
  t.same(await texts(signPage.locator('ol.calls > li > .title')), await texts(frame.locator('ol.calls > li > .title')), 'the page shows the calls as the view did, before the wallet is asked')
  t.same(asked, [], 'nothing asked of the wallet yet')
  await signPage.locator('[data-testid=wallet]').click()
  await signPage.locator('[data-testid=stage][data-stage=done]').waitFor({ timeout: 60_000 })
  t.same(asked, ['eth_requestAccounts', 'eth_signTypedData_v4', 'eth_signTypedData_v4'], 'the wallet was asked for the account, then both batches')
  t.match(await signPage.locator('[data-testid=status]').textContent(), /your calls ran.*paid [\d.]+ USDC: [\d.]+ USDC kept for the gas, [\d.]+ USDC sent back/s, 'the page says done, charged and refunded')
  t.equal(await client.readContract({ address: usdc, abi: erc20Abi, functionName: 'balanceOf', args: [friend] }), parseUnits('1.5', 6), 'the friend was paid on the devnet')
  await signPage.screenshot({ path: new URL('signing-page.png', SCREENSHOTS).pathname, fullPage: true })
})

t.test('a metamask_batch: the review reads the signed delegation, and the page signs it to done', { skip }, async (t) => {
  const account = await delegatedAccount(metaMaskContracts.delegator)
  const friend = privateKeyToAccount(generatePrivateKey()).address
  const batch = await prepare(account.address, friend, 'metamask_batch')
  // What the result says of its calls is not what is signed: the review shows the delegation's.
  const misleading = { ...batch, calls: [{ to: usdc, value: '0', data: encodeTransfer({ token: usdc, to: friend, amount: 1n }).data }] }
  const page = await browser.newPage()
  const { frame, links } = await host(page, 'ui://bruno/review', 'metamask_batch', {}, { content: [{ type: 'text', text: '' }], structuredContent: misleading })
  await frame.locator('[data-testid=payment]').waitFor()
  t.equal(await frame.locator('[data-testid=payment] .title').textContent(), `Pay Bruno at most ${batch.payment.amount} USDC`, 'the payment batch, decoded')
  t.same(
    await texts(frame.locator('ol.calls > li > .title')),
    [`Allow ${router.slice(0, 8)}…${router.slice(-4)} (Uniswap SwapRouter02) to spend 2 USDC`, 'Send 1.5 USDC'],
    'the calls batch as signed, not the result\'s `calls`',
  )
  await frame.locator('[data-testid=sign]').click()
  await waitUntil(() => links.length > 0, 'the view opened a link')
  const signPage = await browser.newPage()
  const asked = await walletPage(signPage, account)
  await signPage.goto(links[0]!)
  await signPage.locator('[data-testid=wallet]').click()
  await signPage.locator('[data-testid=stage][data-stage=done]').waitFor({ timeout: 60_000 })
  t.same(asked, ['eth_requestAccounts', 'eth_signTypedData_v4'], 'one signature: the delegation')
  t.equal(await client.readContract({ address: usdc, abi: erc20Abi, functionName: 'balanceOf', args: [friend] }), parseUnits('1.5', 6), 'the friend was paid on the devnet')
})

t.test('the status view follows a submission to done through the app-only tool, or status where the host refuses it', { skip }, async (t) => {
  const args = { chain: 'local', ...(await executedBatch(await delegatedAccount())) }
  const submitted = await mcp.call('submit', args)
  const page = await browser.newPage({ viewport: { width: 680, height: 320 } })
  const { frame, called } = await host(page, 'ui://bruno/status', 'submit', args, { content: [{ type: 'text', text: JSON.stringify(submitted) }], structuredContent: submitted })
  await frame.locator('[data-testid=stage][data-stage=done]').waitFor({ timeout: 60_000 })
  t.ok(called.length > 0 && called.every((name) => name === 'submission_progress'), `the view polled submission_progress only (${called.length} calls)`)
  t.match(await frame.locator('.details').textContent(), /your calls ran.*transaction 0x[0-9a-f]{64}.*paid [\d.]+ USDC: [\d.]+ USDC kept for the gas, [\d.]+ USDC sent back/s, 'the transaction, charged and refunded, in USDC')
  await page.locator('[data-testid=view]').screenshot({ path: new URL('status-view.png', SCREENSHOTS).pathname })

  // A host that refuses the app-only tool (it speaks 2025: Bruno lists it no such tool): the view follows with status.
  const next = await mcp.call('submit', { chain: 'local', ...(await executedBatch(await delegatedAccount())) })
  const older = await browser.newPage()
  const refusing = await host(older, 'ui://bruno/status', 'status', { id: next.id }, { content: [{ type: 'text', text: '' }], structuredContent: next }, ['submission_progress'])
  await refusing.frame.locator('[data-testid=stage][data-stage=done]').waitFor({ timeout: 60_000 })
  t.ok(refusing.called.includes('status'), `refused ${refusing.called.filter((name) => name === 'submission_progress').length} times, it followed with status`)
})

t.test('hostile input is shown as text, and a link that does not add up is never signed', { skip }, async (t) => {
  const account = await delegatedAccount()
  const batch = await prepare(account.address, privateKeyToAccount(generatePrivateKey()).address)

  // A result whose payment batch pays a stranger, with markup where a symbol and a call would be.
  const stranger = privateKeyToAccount(generatePrivateKey()).address
  const hostile = structuredClone(batch)
  hostile.payment.symbol = '<img src=x onerror="document.title=1">USDC'
  hostile.paymentTypedData.message.batchedCall.calls[0].data = encodeTransfer({ token: usdc, to: stranger, amount: 10n ** 9n }).data
  hostile.typedData.message.batchedCall.calls.push({ to: '<b>0x</b>', value: '0', data: '<script>document.title=2</script>' })
  const page = await browser.newPage()
  const { frame, links } = await host(page, 'ui://bruno/review', 'calibur_batch', {}, { content: [{ type: 'text', text: '' }], structuredContent: hostile })
  await frame.locator('[data-testid=problems]').waitFor()
  t.match(await frame.locator('[data-testid=problems]').textContent(), /does not pay Bruno's payee: Send 1000 USDC/, 'the payment to a stranger is called out')
  t.equal(await frame.locator('img, b').count(), 0, 'no markup from the result became an element')
  t.equal(await frame.locator('script').count(), 2, 'the only scripts are the view\'s own (its context and its module)')
  t.match(await frame.locator('ol.calls').textContent(), /Call an invalid address \(<b>0x<\/b>\)its data is not hex/, 'the markup is shown as the characters it is')
  t.equal(await frame.locator('[data-testid=sign]').count(), 0, 'no sign button')
  t.same(links, [], 'no link opened')

  // The same batch as a crafted link to the signing page: shown, refused, the wallet never asked.
  const fragment = `v1.${Buffer.from(JSON.stringify({ tool: 'calibur_batch', result: hostile })).toString('base64url')}`
  const signPage = await browser.newPage()
  const asked = await walletPage(signPage, account)
  await signPage.goto(`${origin}/sign#${fragment}`)
  await signPage.locator('[data-testid=problems]').waitFor()
  t.equal(await signPage.locator('[data-testid=wallet]').count(), 0, 'no wallet offered')
  t.match(await signPage.locator('[data-testid=message]').textContent(), /Nothing to sign/, 'the page says why')
  t.equal(await signPage.title(), 'Sign — Bruno', 'no script from the link ran')
  t.same(asked, [], 'the wallet was never asked')

  // A damaged link, and a wallet holding another account than the batch's.
  const damaged = await browser.newPage()
  await damaged.goto(`${origin}/sign#v1.not-base64!`)
  t.match(await damaged.locator('.problems').textContent(), /damaged/, 'a damaged link is named as such')
  const other = privateKeyToAccount(generatePrivateKey())
  const otherPage = await browser.newPage()
  await walletPage(otherPage, other)
  await otherPage.goto(`${origin}/sign#v1.${Buffer.from(JSON.stringify({ tool: 'calibur_batch', result: batch })).toString('base64url')}`)
  await otherPage.locator('[data-testid=wallet]').click()
  await otherPage.locator('[data-testid=message]', { hasText: 'Not sent' }).waitFor()
  t.match(await otherPage.locator('[data-testid=message]').textContent(), new RegExp(`the wallet offers ${other.address}, not ${account.address}`), 'the wrong account is refused before anything is signed')
})

async function waitUntil(condition: () => boolean, what: string): Promise<void> {
  for (let tries = 0; tries < 200; tries++) {
    if (condition()) return
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  throw new Error(`timed out: ${what}`)
}
