import type { PauseRecord } from '../core/record.js'
import { isoFromSeconds } from './time.js'

/**
 * Who paused a job, when (ISO 8601) and why: the one shape a pause has outside its record, in
 * a skipped run's result, in the `paused` outcome and its log line, and in the CLI's JSON.
 */
export interface PauseView {
  /** An operator (`lambda-singleton pause`), or the job's own run after failed runs (`pauseAfterFailures`). */
  readonly by: string
  /** When it was paused, ISO 8601, by the store's clock. */
  readonly at: string
  /** Why, as given with the pause. */
  readonly note?: string
}

/** The record's pause as results and log lines show it. */
export function pauseView(paused: PauseRecord): PauseView {
  return {
    by: paused.by,
    at: isoFromSeconds(paused.at),
    ...(paused.note !== undefined && { note: paused.note }),
  }
}
