import type { SubmissionView } from './schemas.ts'
import { submissionView } from './status.ts'
import type { SubmissionStore } from '../store/store.ts'

/** How often the held submissions are read from the store while any is waited for. */
const READ_EVERY_MS = 250

interface Waiter {
  readonly deadline: number
  readonly resolve: (view: SubmissionView) => void
  /** The submission as last read (as accepted, at first): what a waiter whose time is up gets, the store answering or not. */
  latest: SubmissionView
}

/**
 * Holds callers until their submission settles (`done` or `failed`), for a binding that answers
 * only then (x402). One timer for every waiter, running only while someone waits; each tick reads
 * each held submission once from the store, however many callers wait on it — never the chain, so a
 * thousand held requests cost the node nothing. Whichever process's runner settles a submission,
 * the store says so.
 *
 * @example
 * const view = await waits.settled(accepted, 120_000) // its final view, or the latest one after 120 s
 */
export class SettledWait {
  readonly #store: Pick<SubmissionStore, 'get'>
  readonly #waiting = new Map<string, Waiter[]>()
  #timer: NodeJS.Timeout | undefined

  constructor(store: Pick<SubmissionStore, 'get'>) {
    this.#store = store
  }

  /** The submission's view once it is `done` or `failed`, or as it stands after `timeoutMs` (as last read, `accepted` if never). */
  settled(accepted: SubmissionView, timeoutMs: number): Promise<SubmissionView> {
    return new Promise((resolve) => {
      const waiters = this.#waiting.get(accepted.id) ?? []
      waiters.push({ deadline: Date.now() + timeoutMs, resolve, latest: accepted })
      this.#waiting.set(accepted.id, waiters)
      this.#timer ??= setInterval(() => void this.#tick(), READ_EVERY_MS)
    })
  }

  /** Answers every waiter at once (a shutdown), each with its submission as it stands. */
  async close(): Promise<void> {
    await this.#tick(Number.POSITIVE_INFINITY)
  }

  async #tick(now = Date.now()): Promise<void> {
    await Promise.all(
      [...this.#waiting].map(async ([id, waiters]) => {
        const submission = await this.#store.get(id).catch(() => undefined)
        const final = submission !== undefined && (submission.stage === 'done' || submission.stage === 'failed')
        if (submission) for (const waiter of waiters) waiter.latest = submissionView(submission)
        const answered = waiters.filter((waiter) => final || waiter.deadline <= now)
        if (answered.length === 0) return
        for (const waiter of answered) waiter.resolve(waiter.latest)
        const left = (this.#waiting.get(id) ?? []).filter((waiter) => !answered.includes(waiter))
        if (left.length === 0) this.#waiting.delete(id)
        else this.#waiting.set(id, left)
      }),
    )
    if (this.#waiting.size === 0 && this.#timer) {
      clearInterval(this.#timer)
      this.#timer = undefined
    }
  }
}
