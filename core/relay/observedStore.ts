import type { Metrics } from '../metrics.ts'
import type { SubmissionStore } from './store.ts'

/**
 * A store that counts every submission entering a stage, and times those that reach `done`.
 * Stages change only through the store, so this one wrapper sees every transition, whichever
 * part of the relay (submit, runner) makes it.
 *
 * @example
 * const store = observedStore(new SqliteSubmissionStore(path), metrics)
 */
export function observedStore(store: SubmissionStore, metrics: Metrics): SubmissionStore {
  return {
    async insert(submission) {
      await store.insert(submission)
      metrics.submissions.inc({ chain: submission.chain, stage: submission.stage })
    },
    async update(id, patch) {
      // Read before writing only for a stage change: the count needs the chain, `done` its age.
      const before = patch.stage === undefined ? undefined : await store.get(id)
      await store.update(id, patch)
      if (!before || patch.stage === undefined || patch.stage === before.stage) return
      metrics.submissions.inc({ chain: before.chain, stage: patch.stage })
      if (patch.stage === 'done') metrics.timeToDone.observe({ chain: before.chain }, (Date.now() - before.createdAt) / 1000)
    },
    get: (id) => store.get(id),
    active: (chain) => store.active(chain),
    highestNonce: (chain) => store.highestNonce(chain),
    ping: () => store.ping(),
    close: () => store.close(),
  }
}
