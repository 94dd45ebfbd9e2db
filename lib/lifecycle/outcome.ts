import type { PauseView } from '../schedule/pause.js'
/** What happened to one invocation, as logged and as passed to `onOutcome` (for metrics). */
export const Outcome = {
  /** The lock was taken; the handler runs. */
  Acquired: 'acquired',
  /** Another run holds the lock; the handler did not run. */
  Held: 'held',
  /** This tick already completed; the handler did not run. */
  Duplicate: 'duplicate',
  /** The job is paused (or just paused itself after failed runs); the handler did not run. */
  Paused: 'paused',
  /**
   * The tick was delivered more than `maxTickAgeMs` after its scheduled time; the handler did not
   * run, and the store was not asked.
   */
  Late: 'late',
  /** The handler finished (or failed) and the lock was released. */
  Released: 'released',
  /** The lease was taken over while the handler ran: its work may have overlapped another run's. */
  Lost: 'lost',
  /**
   * A run of a newer tick took the lock over while this one ran (`onHeld: 'replace'`): its signal
   * aborted, and its renewals, release and fenced writes are refused.
   */
  Replaced: 'replaced',
  /**
   * An operator ended the lease on purpose while the handler ran (force-release, or pause with
   * `now`): its signal aborted, and its renewals, release and fenced writes are refused. No
   * accident: it is not counted as a lost lease.
   */
  ReleasedByOperator: 'released-by-operator',
  /** The handler ended but the release failed: the lock stays held until its lease expires. */
  ReleaseFailed: 'release-failed',
  /** The lock could not be used at all (store unreachable, corrupted record, bad key), or a heartbeat failed. */
  Error: 'error',
} as const
export type Outcome = (typeof Outcome)[keyof typeof Outcome]

export interface OutcomeEvent {
  readonly outcome: Outcome
  readonly key: string
  readonly token?: number
  readonly owner?: string
  readonly tick?: string
  /** How long acquiring took, waiting included: on `acquired`, `held` and `duplicate`. */
  readonly waitMs?: number
  /** How long the run held the lock, from acquisition to release: on `released`. */
  readonly heldMs?: number
  /** On `paused`: who paused the job, when (ISO 8601) and why. */
  readonly paused?: PauseView
  /** On `paused` when the job paused itself: its failed runs in a row. */
  readonly failures?: number
  /**
   * On `released`: whether the handler completed (returned), so the release cleared the
   * checkpoint and recorded the tick as done (unless the acquisition warned that the tick was
   * ahead of the store's clock: a fast host's tick is not recorded); `false` when it threw or
   * timed out.
   */
  readonly completed?: boolean
  /** On `late`: how long after its scheduled time the tick was delivered, by the local clock. */
  readonly tickAgeMs?: number
  /** On `acquired` by a replacement: the run it replaced (`onHeld: 'replace'`). */
  readonly replaced?: { readonly owner: string; readonly token: number; readonly tick?: string | undefined }
  /** On `released-by-operator`: the operator who ended the lease. */
  readonly operator?: string
  readonly error?: Error
}
