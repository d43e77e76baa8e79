import type { SubmissionView } from './schemas.ts'
import type { Submission, SubmissionStore } from '../store/store.ts'

/**
 * The status of a submission: its stage, its transaction once signed, the reason when it failed.
 * `undefined` for an id the store does not have.
 *
 * @example
 * await submissionStatus(store, 'b3c1…') // { id, chain: 'base', stage: 'done', transaction: { hash, blockNumber, … } }
 */
export async function submissionStatus(store: SubmissionStore, id: string): Promise<SubmissionView | undefined> {
  const submission = await store.get(id)
  return submission && submissionView(submission)
}

/** The public view of a stored submission (never its raw transaction bytes). */
export function submissionView(submission: Submission): SubmissionView {
  const { transaction } = submission
  return {
    id: submission.id,
    chain: submission.chain,
    stage: submission.stage,
    createdAt: submission.createdAt,
    updatedAt: submission.updatedAt,
    deadline: submission.deadline,
    ...(transaction
      ? {
          transaction: {
            hash: transaction.hash,
            nonce: transaction.nonce,
            ...(submission.blockNumber ? { blockNumber: submission.blockNumber } : {}),
            ...(submission.gasUsed ? { gasUsed: submission.gasUsed } : {}),
            ...(submission.fee ? { feeWei: submission.fee } : {}),
          },
        }
      : {}),
    ...(submission.reason ? { reason: submission.reason } : {}),
    ...(submission.outcome ? { outcome: submission.outcome } : {}),
  }
}
