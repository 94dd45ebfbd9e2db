import type { LockRecord, PauseRecord } from '../core/record.js'
import type { ScheduleFields } from './fields.js'

/** What a run's release writes about failed runs, and the pause it starts, if any. */
export interface FailureCount {
  /** The fields the release sets or clears. */
  readonly schedule: ScheduleFields
  /** Failed runs in a row, this one included (0 for a completed run). */
  readonly failures: number
  /** The pause this release starts: the job failed `pauseAfterFailures` runs in a row. */
  readonly pause: PauseRecord | undefined
}

/**
 * What the release of the run that holds `record` writes: a completed run clears the count of
 * failed runs; a failed one adds itself to it, and pauses the job when the count reaches
 * `pauseAfterFailures`. Runs count as in a row when their run numbers are: an acquisition that
 * was not counted (a crashed run, or a release by a release that does not count) starts again.
 */
export function countFailures(
  record: LockRecord,
  outcome: {
    readonly succeeded: boolean
    readonly error: unknown
    readonly pauseAfterFailures: number | undefined
    /** Who pauses: the run's owner. */
    readonly by: string
    /** Now by the store's clock, epoch ms: a pause is dated as the record's other times are. */
    readonly now: number
  },
): FailureCount {
  if (outcome.succeeded) {
    const counted = record.failures !== undefined || record.failed_run !== undefined
    return { schedule: counted ? { failures: null, failed_run: null } : {}, failures: 0, pause: undefined }
  }
  const run = record.run ?? 0
  const inRow =
    record.failures !== undefined && record.failed_run !== undefined && record.failed_run + 1 === run
  const failures = (inRow ? (record.failures ?? 0) : 0) + 1
  const { pauseAfterFailures } = outcome
  const pauses = pauseAfterFailures !== undefined && failures >= pauseAfterFailures && !record.paused
  const pause: PauseRecord | undefined = pauses
    ? {
        by: outcome.by,
        at: Math.round(outcome.now) / 1000,
        note: `${failures} failed runs in a row (pauseAfterFailures: ${pauseAfterFailures})${lastError(outcome.error)}`,
      }
    : undefined
  return { schedule: { failures, failed_run: run, ...(pause && { paused: pause }) }, failures, pause }
}

/** The last failure, for the pause's note: its message, kept short. */
function lastError(error: unknown): string {
  if (error === undefined) return ''
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error)
  return `; the last: ${text.length > 200 ? `${text.slice(0, 199)}…` : text}`
}
