import { getAddress, isAddress, recoverTypedDataAddress, type Hex } from 'viem'
import { reviewOf, SIGNABLE_TOOLS, type Review } from '../review.ts'
import { submissionWords } from '../submission.ts'
import type { PageContext } from '../context.ts'
import { el, pageContext, reviewSection } from './dom.ts'
import { decodeSigningLink } from './signingLink.ts'
import { SUBMISSION_PROGRESS_TOOL, POLL_MS } from './constants.ts'

/** An EIP-1193 provider, as a wallet announces it by EIP-6963. */
interface Eip1193 {
  request(args: { method: string; params?: unknown[] }): Promise<unknown>
}
interface Announced {
  readonly info: { readonly uuid: string; readonly name: string; readonly rdns: string }
  readonly provider: Eip1193
}

type Json = Record<string, unknown>

const context = pageContext<PageContext>()
const root = document.getElementById('root')!
const status = el('div', 'status')
status.dataset.testid = 'status'

/**
 * The signing page: shows the batch in the link's fragment in words (the review view's words, one
 * function), lets the user pick a wallet announced by EIP-6963, has it sign the typed data
 * (`eth_signTypedData_v4`; Calibur's two batches), checks that the account signed, and hands the
 * signatures to Bruno's own tools — the delegate's execute check, then submit — then follows the
 * submission to done. Nothing on the page is HTML from outside; Bruno stores nothing of the link.
 */
function main(): void {
  const link = decodeSigningLink(location.hash)
  if (typeof link === 'string') return fail(link)
  const review = reviewOf(link.tool, link.result, context.chains, Date.now() / 1000)
  root.replaceChildren(el('h1', '', 'Sign with your wallet'), reviewSection(review), status)
  if (review.problems.length > 0) return say('Nothing to sign: this batch does not add up (above).')
  if (!(SIGNABLE_TOOLS as readonly string[]).includes(link.tool)) return say('This page signs batches (calibur_batch, metamask_batch) only.')
  const wallets = el('div', 'wallets')
  wallets.dataset.testid = 'wallets'
  root.insertBefore(el('h2', '', 'Your wallets'), status)
  root.insertBefore(wallets, status)
  const seen = new Set<string>()
  window.addEventListener('eip6963:announceProvider', (event) => {
    const announced = (event as CustomEvent<Announced>).detail
    if (!announced?.info || typeof announced.provider?.request !== 'function' || seen.has(announced.info.uuid)) return
    seen.add(announced.info.uuid)
    const button = el('button', '', `Sign with ${String(announced.info.name).slice(0, 40)}`)
    button.dataset.testid = 'wallet'
    button.addEventListener('click', () => {
      for (const other of wallets.querySelectorAll('button')) (other as HTMLButtonElement).disabled = true
      sign(announced.provider, link.tool, link.result as Json, review).catch((error: unknown) => say(`Not sent: ${messageOf(error)}`))
    })
    wallets.append(button)
  })
  window.dispatchEvent(new Event('eip6963:requestProvider'))
  say('Choose the wallet that holds the account above.')
}

async function sign(wallet: Eip1193, tool: string, result: Json, review: Review): Promise<void> {
  const account = getAddress(review.account)
  const chain = context.chains.find((known) => known.chainId === review.chainId)!
  const accounts = ((await wallet.request({ method: 'eth_requestAccounts' })) as unknown[]).filter((item): item is string => typeof item === 'string' && isAddress(item, { strict: false }))
  if (!accounts.some((item) => getAddress(item) === account)) {
    throw new Error(`the wallet offers ${accounts.map((item) => getAddress(item)).join(', ') || 'no account'}, not ${account}: choose that account in the wallet and try again`)
  }
  const signed = async (typedData: unknown): Promise<Hex> => {
    say('Waiting for your wallet…')
    const signature = (await wallet.request({ method: 'eth_signTypedData_v4', params: [account, JSON.stringify(typedData)] })) as Hex
    const { domain, types, primaryType, message } = typedData as { domain: Json; types: Json; primaryType: string; message: Json }
    const { EIP712Domain: _domainType, ...signedTypes } = types
    const signer = await recoverTypedDataAddress({ domain, types: signedTypes, primaryType, message, signature } as Parameters<typeof recoverTypedDataAddress>[0])
    if (signer !== account) throw new Error(`the wallet signed as ${signer}, not as ${account}`)
    return signature
  }
  // Calibur's two batches (the payment first), or MetaMask's one delegation: then its execute check.
  const signatures =
    tool === 'calibur_batch'
      ? { paymentTypedData: result.paymentTypedData, paymentSignature: await signed(result.paymentTypedData), typedData: result.typedData, signature: await signed(result.typedData) }
      : { typedData: result.typedData, signature: await signed(result.typedData), batches: result.batches }
  say('Checking with Bruno…')
  const executed = await callTool(tool === 'calibur_batch' ? 'calibur_execute' : 'metamask_execute', {
    chain: chain.chain,
    ...signatures,
    ...(result.authorizationList ? { authorizationList: result.authorizationList } : {}),
  })
  say('Sending…')
  const submission = await callTool('submit', {
    chain: chain.chain,
    call: executed.call,
    payment: executed.payment,
    ...(executed.authorizationList ? { authorizationList: executed.authorizationList } : {}),
  })
  const token = (executed.payment as Json).token as string
  let current = submission
  while (!showSubmission(current, chain, token)) {
    await new Promise((resolve) => setTimeout(resolve, POLL_MS))
    current = await callTool(SUBMISSION_PROGRESS_TOOL, { id: submission.id }).catch(() => current)
  }
}

function showSubmission(submission: Json, chain: PageContext['chains'][number], token: string): boolean {
  const words = submissionWords(submission, chain, token)
  const stage = el('p', 'stage', words.headline)
  stage.dataset.testid = 'stage'
  stage.dataset.stage = words.stage
  status.replaceChildren(stage, el('ul', 'details', ...words.lines.map((line) => el('li', '', line))))
  return words.finished
}

/** One tool of Bruno's, called over its own MCP endpoint: the operations the agent's tools are. */
async function callTool(name: string, args: Json): Promise<Json> {
  const response = await fetch(context.mcpPath, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }),
  })
  const body = (await response.json().catch(() => undefined)) as { result?: { isError?: boolean; structuredContent?: Json; content?: { text?: string }[] }; error?: { message?: string } } | undefined
  if (!body) throw new Error(`Bruno answered ${response.status} without a body`)
  if (body.error) throw new Error(String(body.error.message))
  if (body.result?.isError || !body.result?.structuredContent) throw new Error(String(body.result?.content?.[0]?.text ?? 'Bruno refused'))
  return body.result.structuredContent
}

function messageOf(error: unknown): string {
  const text = error instanceof Error ? error.message : typeof error === 'object' && error !== null && 'message' in error ? String((error as { message: unknown }).message) : String(error)
  return text.slice(0, 600)
}

function say(text: string): void {
  const line = el('p', 'note', text)
  line.dataset.testid = 'message'
  status.replaceChildren(line)
}

function fail(text: string): void {
  root.replaceChildren(el('h1', '', 'Sign with your wallet'), el('p', 'problems', text))
}

main()
