import type { FastifyBaseLogger } from 'fastify'
import type { Metrics } from '../metrics.ts'
import type { Submission, SubmissionPatch, SubmissionStore } from './store.ts'

/**
 * A store that logs every submission's life (accepted and done at info, failed at warn with its
 * reason, done with a call that failed on chain at warn with the call's reason, the stages between
 * at debug) and, with `metrics`, counts every submission entering a stage, times those that reach
 * `done` and counts the calls that failed on chain. Stages change only through the store, so this one
 * wrapper sees every transition, whichever part of the relay (submit, runner) makes it.
 *
 * @example
 * const store = observedStore(new SqliteSubmissionStore(path), log, metrics)
 */
export function observedStore(store: SubmissionStore, log: FastifyBaseLogger, metrics?: Metrics): SubmissionStore {
  return {
    async insert(submission, caps) {
      const stored = await store.insert(submission, caps)
      if (stored.id !== submission.id) {
        log.info({ submission: stored.id, chain: stored.chain }, 'submission repeated: the active one with the same payment answered')
        return stored
      }
      metrics?.submissions.inc({ chain: submission.chain, stage: submission.stage })
      log.info({ submission: submission.id, chain: submission.chain, stage: submission.stage }, 'submission accepted')
      return stored
    },
    async update(id, patch, fence) {
      // Read before writing only for a stage change: the count needs the chain, `done` its age.
      const before = patch.stage === undefined ? undefined : await store.get(id)
      await store.update(id, patch, fence)
      observe(id, patch, before)
    },
    async claim(id, patch, fence) {
      const before = await store.get(id)
      const claimed = await store.claim(id, patch, fence)
      if (claimed) observe(id, patch, before)
      return claimed
    },
    get: (id) => store.get(id),
    active: (chain) => store.active(chain),
    highestNonce: (chain, lane, first) => store.highestNonce(chain, lane, first),
    activeByIdentity: (identity) => store.activeByIdentity(identity),
    doneByIdentity: (identity) => store.doneByIdentity(identity),
    byPaymentId: (chain, paymentId) => store.byPaymentId(chain, paymentId),
    standing: (payer, client, since) => store.standing(payer, client, since),
    async prune(before, fence) {
      const count = await store.prune(before, fence)
      if (count > 0) log.info({ count }, 'settled submissions pruned')
      return count
    },
    takeRunnerKey: (key) => store.takeRunnerKey(key),
    runnerEpoch: (key) => store.runnerEpoch(key),
    heartbeat: (chain, replica, liveMs) => store.heartbeat(chain, replica, liveMs),
    ping: () => store.ping(),
    close: () => store.close(),
  }

  /** Counts and logs a stage change `patch` made to the submission that was `before`. */
  function observe(id: string, patch: SubmissionPatch, before: Submission | undefined): void {
    if (!before || patch.stage === undefined || patch.stage === before.stage) return
    const fields = { submission: id, chain: before.chain, stage: patch.stage }
    metrics?.submissions.inc({ chain: before.chain, stage: patch.stage })
    if (patch.stage === 'done') {
      const seconds = (Date.now() - before.createdAt) / 1000
      metrics?.timeToDone.observe({ chain: before.chain }, seconds)
      const outcome = patch.outcome ?? before.outcome
      if (outcome?.callSucceeded === false) {
        // Paid for, and the caller's call did nothing: the operator sees it, the caller's status says why.
        metrics?.callsFailed.inc({ chain: before.chain })
        log.warn({ ...fields, blockNumber: patch.blockNumber ?? before.blockNumber, seconds, callReason: outcome.callReason }, 'submission done: the call failed on chain (the payment was taken)')
      } else log.info({ ...fields, blockNumber: patch.blockNumber, seconds }, 'submission done')
    } else if (patch.stage === 'failed') log.warn({ ...fields, reason: patch.reason }, 'submission failed')
    else log.debug(fields, 'submission stage')
  }
}
