import { ethAmount, plainText, tokenAmount, type KnownChain } from './describe.ts'

/** The stages a submission passes, in order; `done` and `failed` end it. */
const STAGE_WORDS: Record<string, string> = {
  waiting: 'Waiting: stored, not sent yet',
  sending: 'Sending to the chain',
  confirming: 'Included: waiting for confirmations',
  done: 'Done',
  failed: 'Failed',
}

/** A submission in words, as the status view and the signing page show it. */
export interface SubmissionWords {
  readonly stage: string
  readonly headline: string
  readonly finished: boolean
  readonly lines: readonly string[]
}

type Json = Record<string, unknown>

/**
 * A submission (submit's and status's result) in words: its stage, why it is held or failed, the
 * transaction once sent, and once included what was paid, charged and sent back — in the payment
 * token's units where `token` (its address) is known, else in base units. Everything in
 * `submission` is untrusted text.
 *
 * @example
 * submissionWords({ stage: 'done', outcome: { paidBaseUnits: '420000', chargedBaseUnits: '120000', refundedBaseUnits: '300000', callSucceeded: true }, … }, known, USDC)
 * // { stage: 'done', headline: 'Done', finished: true, lines: ['your calls ran', 'paid 0.42 USDC: 0.12 USDC kept for the gas, 0.3 USDC sent back', …] }
 */
export function submissionWords(submission: unknown, known: KnownChain | undefined, token?: string): SubmissionWords {
  if (typeof submission !== 'object' || submission === null) return { stage: 'unknown', headline: 'No submission to show', finished: true, lines: [] }
  const view = submission as Json
  const stage = typeof view.stage === 'string' && view.stage in STAGE_WORDS ? view.stage : 'unknown'
  const lines: string[] = []
  const amount = (baseUnits: unknown) => {
    let value: bigint
    try {
      value = BigInt(String(baseUnits))
    } catch {
      return 'an unreadable amount'
    }
    return token ? tokenAmount(known, token, value) : `${value} base units of the payment token`
  }
  if (typeof view.reason === 'string') lines.push(plainText(view.reason, 600))
  const transaction = typeof view.transaction === 'object' && view.transaction !== null ? (view.transaction as Json) : undefined
  if (transaction) {
    lines.push(`transaction ${plainText(String(transaction.hash), 66)}`)
    if (transaction.blockNumber !== undefined) lines.push(`in block ${plainText(String(transaction.blockNumber), 20)}`)
    if (transaction.feeWei !== undefined) {
      try {
        lines.push(`the runner paid ${ethAmount(BigInt(String(transaction.feeWei)))} for its gas`)
      } catch {
        // An unreadable fee is left out.
      }
    }
  }
  const outcome = typeof view.outcome === 'object' && view.outcome !== null ? (view.outcome as Json) : undefined
  if (outcome) {
    lines.unshift(outcome.callSucceeded === true ? 'your calls ran' : `your calls failed on chain${typeof outcome.callReason === 'string' ? `: ${plainText(outcome.callReason, 200)}` : ''}; the payment was still taken`)
    const charged = outcome.chargedBaseUnits !== undefined ? `: ${amount(outcome.chargedBaseUnits)} kept for the gas` : ''
    const refunded = outcome.refundedBaseUnits !== undefined ? `, ${amount(outcome.refundedBaseUnits)} sent back` : ''
    lines.push(`paid ${amount(outcome.paidBaseUnits)}${charged}${refunded}`)
  }
  return { stage, headline: STAGE_WORDS[stage] ?? `Stage ${plainText(String(view.stage), 20)}`, finished: stage === 'done' || stage === 'failed' || stage === 'unknown', lines }
}
