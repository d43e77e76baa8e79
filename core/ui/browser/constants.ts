/** The app-only tool the status view and signing page poll (core/ui/progressTool.ts serves it). */
export const SUBMISSION_PROGRESS_TOOL = 'submission_progress'
/** How often a submission is polled: a block on a fast chain. */
export const POLL_MS = 1_000
