import { decodeAbiParameters, encodeAbiParameters, getAddress, isAddress, keccak256, type Hex } from 'viem'
import { addressWords, deadlineWords, describeCall, plainText, tokenAmount, tokenName, type CallWords, type KnownChain, type PlainCall } from './describe.ts'

/** The prepare tools whose results a review shows, and the signing page signs. */
export const REVIEWED_TOOLS = ['calibur_batch', 'metamask_batch', 'payment_authorization', 'transfer_authorization'] as const
export type ReviewedTool = (typeof REVIEWED_TOOLS)[number]

/** Tools whose result the signing page can take to `done` alone: both signatures and nothing else. */
export const SIGNABLE_TOOLS: readonly ReviewedTool[] = ['calibur_batch', 'metamask_batch']

/** A prepared result in words, as the review view and the signing page show it before any signature. */
export interface Review {
  /** `<chain> (chain id N)`, or the id alone on a chain this deployment does not serve. */
  readonly chain: string
  readonly chainId: number
  readonly account: string
  /** What pays Bruno, first: the most it can take and what comes back. */
  readonly payment?: { readonly title: string; readonly details: readonly string[] }
  /** The account's own calls, in order, as signed (a MetaMask delegation's: its pinned batch). */
  readonly calls: readonly CallWords[]
  readonly deadline: string
  /** What does not add up: shown above everything, and the signing page then refuses to sign. */
  readonly problems: readonly string[]
}

type Json = Record<string, unknown>

/**
 * A prepare tool's result in words, from the typed data the wallet will sign (never from the
 * result's own summary): the chain and account, the payment first, each call decoded where the
 * deployment knows the contract (`describeCall`), the deadline. Everything in `result` is
 * untrusted: a field of the wrong shape becomes a problem, not an exception.
 *
 * @example
 * reviewOf('calibur_batch', result, knownChains, Date.now() / 1000)
 * // { chain: 'devnet (chain id 31337)', account: '0x7099…79C8', payment: { title: 'Pay Bruno 0.42 USDC', … }, calls: [...], deadline: '…', problems: [] }
 */
export function reviewOf(tool: string, result: unknown, chains: readonly KnownChain[], now: number): Review {
  const problems: string[] = []
  const found = (REVIEWED_TOOLS as readonly string[]).includes(tool) ? (tool as ReviewedTool) : undefined
  if (!found) return emptyReview([`${plainText(tool, 40) || 'a tool'} is not a tool this view reviews`])
  if (!isObject(result)) return emptyReview(['the result is not an object'])
  const typedData = result.typedData
  if (!isObject(typedData) || !isObject(typedData.domain) || !isObject(typedData.message)) return emptyReview(['the result has no typed data to sign'])
  const chainId = Number(typedData.domain.chainId)
  const known = chains.find((chain) => chain.chainId === chainId)
  if (!known) problems.push(`chain id ${String(typedData.domain.chainId).slice(0, 20)} is not a chain this deployment serves`)
  const chain = known ? `${plainText(known.chain, 32)} (chain id ${chainId})` : `chain id ${String(chainId).slice(0, 20)}`
  const base = { chain, chainId }
  switch (found) {
    case 'calibur_batch':
      return { ...base, ...caliburReview(result, typedData, known, now, problems), problems }
    case 'metamask_batch':
      return { ...base, ...metamaskReview(result, typedData, known, now, problems), problems }
    default:
      return { ...base, ...transferReview(found, typedData, known, now, problems), problems }
  }
}

type Parts = Omit<Review, 'chain' | 'chainId' | 'problems'>

function caliburReview(result: Json, typedData: Json, known: KnownChain | undefined, now: number, problems: string[]): Parts {
  const account = String((typedData.domain as Json).verifyingContract)
  const calls = batchCalls(typedData, problems, 'the calls batch')
  const paymentTypedData = result.paymentTypedData
  const paymentMessage = isObject(paymentTypedData) && isObject(paymentTypedData.message) ? paymentTypedData.message : undefined
  const paymentCalls = paymentMessage ? batchCalls(paymentTypedData as Json, problems, 'the payment batch') : []
  if (!paymentMessage) problems.push('the result has no payment batch to sign')
  else if (isObject(paymentTypedData) && isObject(paymentTypedData.domain) && String(paymentTypedData.domain.verifyingContract) !== account) {
    problems.push('the payment batch is for another account than the calls')
  }
  const message = typedData.message as Json
  for (const [name, batch] of [['payment batch', paymentMessage], ['calls batch', message]] as const) {
    if (batch && known && isAddress(String(batch.executor), { strict: false }) && getAddress(String(batch.executor)) !== known.runner) {
      problems.push(`the ${name} may be run by ${addressWords(known, String(batch.executor))}, not only by Bruno's Runner`)
    }
  }
  if (paymentMessage && Number(paymentMessage.deadline) !== Number(message.deadline)) problems.push('the two batches have different deadlines')
  return {
    account,
    payment: paymentCalls.length === 1 ? paymentWords(known, paymentCalls[0]!, account, problems, result) : undefined,
    calls: calls.map((call) => describeCall(known, call, account)),
    deadline: deadlineWords(Number(message.deadline), now),
  }
}

function metamaskReview(result: Json, typedData: Json, known: KnownChain | undefined, now: number, problems: string[]): Parts {
  const message = typedData.message as Json
  const account = String(message.delegator)
  if (known && isAddress(String(message.delegate), { strict: false }) && getAddress(String(message.delegate)) !== known.runner) {
    problems.push(`the delegation is to ${addressWords(known, String(message.delegate))}, not to Bruno's Runner`)
  }
  const terms = paymentFirstTerms(message.caveats, result.batches)
  if (typeof terms === 'string') {
    problems.push(terms)
    return { account, calls: [], deadline: 'unknown' }
  }
  const [payment, ...extra] = terms.payment
  if (!payment || extra.length > 0) problems.push(`the delegation's payment batch has ${terms.payment.length} calls, not one transfer to Bruno's payee`)
  return {
    account,
    payment: payment ? paymentWords(known, payment, account, problems, result) : undefined,
    calls: terms.calls.map((call) => describeCall(known, call, account)),
    deadline: deadlineWords(Number(terms.deadline), now),
  }
}

const executions = { type: 'tuple[]', components: [{ name: 'target', type: 'address' }, { name: 'value', type: 'uint256' }, { name: 'callData', type: 'bytes' }] } as const
const hashesAndDeadline = [{ type: 'bytes32' }, { type: 'bytes32' }, { type: 'uint256' }] as const

/**
 * What a payment-first delegation pins (metamask_batch's layout, SPEC §6): its one caveat's terms
 * are the hashes of two batches — the payment, then the calls — and the deadline; the batches
 * themselves come beside it (`batches`, `abi.encode(Execution[], Execution[])`), and are shown only
 * when they hash to what is signed. Which contract enforces the caveat is metamask_execute's
 * check; anything else is a problem in words.
 */
function paymentFirstTerms(caveats: unknown, batches: unknown): { payment: PlainCall[]; calls: PlainCall[]; deadline: bigint } | string {
  if (!Array.isArray(caveats) || caveats.length !== 1 || !isObject(caveats[0]) || typeof caveats[0].terms !== 'string') {
    return "the delegation's caveats are not the one payment-first caveat"
  }
  if (typeof batches !== 'string') return 'the result has no batches beside the delegation'
  try {
    const [paymentHash, callsHash, deadline] = decodeAbiParameters(hashesAndDeadline, caveats[0].terms as Hex)
    const [payment, calls] = decodeAbiParameters([executions, executions], batches as Hex)
    if (keccak256(encodeAbiParameters([executions], [payment])) !== paymentHash || keccak256(encodeAbiParameters([executions], [calls])) !== callsHash) {
      return 'the batches beside the delegation are not the ones it signs (their hashes differ)'
    }
    const plain = (batch: typeof payment) => batch.map((execution) => ({ to: execution.target, value: execution.value.toString(), data: execution.callData }))
    return { payment: plain(payment), calls: plain(calls), deadline }
  } catch {
    return "the delegation's caveat or its batches do not decode"
  }
}

function transferReview(tool: ReviewedTool, typedData: Json, known: KnownChain | undefined, now: number, problems: string[]): Parts {
  const message = typedData.message as Json
  const token = String((typedData.domain as Json).verifyingContract)
  const from = String(message.from)
  const to = String(message.to)
  let value: bigint
  try {
    value = BigInt(String(message.value))
  } catch {
    problems.push('the transfer has no readable value')
    value = 0n
  }
  const paysBruno = known !== undefined && isAddress(to, { strict: false }) && getAddress(to) === known.payee
  if (tool === 'payment_authorization' && !paysBruno) problems.push(`the payment goes to ${addressWords(known, to)}, not to Bruno's payee`)
  const words: CallWords = {
    title: `${paysBruno ? 'Pay Bruno' : 'Send'} ${tokenAmount(known, token, value)}`,
    details: [`to ${addressWords(known, to, from)}`, 'a signed transfer (EIP-3009): it moves only this amount, once'],
  }
  return {
    account: from,
    ...(paysBruno ? { payment: { title: words.title, details: [...words.details, ...refundWords(known, token)] } } : {}),
    calls: paysBruno ? [] : [words],
    deadline: deadlineWords(Number(message.validBefore), now),
  }
}

/**
 * The payment call in words, checked to be a transfer to Bruno's payee: the most it can take, what
 * the result expects to be charged at current fees (never shown above that most), what is kept,
 * what comes back.
 */
function paymentWords(known: KnownChain | undefined, call: PlainCall, account: string, problems: string[], result: Json): Review['payment'] {
  const words = describeCall(known, call, account)
  if (!words.title.startsWith('Pay Bruno ')) problems.push(`the payment batch does not pay Bruno's payee: ${words.title}`)
  const markup = known ? ` plus ${known.markupBps / 100} %` : ''
  const expected = expectedOf(result, call)
  return {
    title: words.title.replace(/^Pay Bruno /, 'Pay Bruno at most '),
    details: [
      ...(expected === undefined ? [] : [`expected at today's fees: ${tokenAmount(known, call.to, expected)}`]),
      `Bruno keeps what the runner's gas costs${markup}`,
      ...refundWords(known, call.to),
      'paid first, and kept even if your calls then fail on chain',
    ],
  }
}

/** The result's `payment.expectedChargeBaseUnits`, when it reads as an amount no larger than the signed payment's. */
function expectedOf(result: Json, call: PlainCall): bigint | undefined {
  const payment = isObject(result.payment) ? result.payment : undefined
  if (typeof payment?.expectedChargeBaseUnits !== 'string' || !/^[0-9]{1,78}$/.test(payment.expectedChargeBaseUnits)) return undefined
  const expected = BigInt(payment.expectedChargeBaseUnits)
  const signed = call.data.length === 138 ? BigInt(`0x${call.data.slice(74)}`) : 0n
  return expected <= signed ? expected : undefined
}

function refundWords(known: KnownChain | undefined, token: string): string[] {
  return [`the rest of the ${tokenName(known, token)} comes back to your account in the same transaction`]
}

function batchCalls(typedData: Json, problems: string[], name: string): PlainCall[] {
  const message = typedData.message as Json | undefined
  const batched = message && isObject(message.batchedCall) ? message.batchedCall : undefined
  const calls = batched && Array.isArray(batched.calls) ? batched.calls : undefined
  if (!calls) {
    problems.push(`${name} has no calls`)
    return []
  }
  const plain = calls.filter(isPlainCall)
  if (plain.length !== calls.length) problems.push(`${name} has calls that are not {to, value, data}`)
  return plain
}

function emptyReview(problems: string[]): Review {
  return { chain: 'an unknown chain', chainId: 0, account: '', calls: [], deadline: 'unknown', problems }
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function isPlainCall(value: unknown): value is PlainCall {
  return isObject(value) && typeof value.to === 'string' && typeof value.value === 'string' && typeof value.data === 'string'
}
