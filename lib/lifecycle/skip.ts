import type { LockRecord, PauseRecord } from '../core/record.js'
import { type PauseView, pauseView } from '../schedule/pause.js'
import { isoFromSeconds } from '../schedule/time.js'

export const SkipReason = {
  /** Another run holds the lock. */
  Held: 'held',
  /** This tick already completed. */
  Duplicate: 'duplicate',
  /** The job is paused (`lambda-singleton pause`, or `pauseAfterFailures`). */
  Paused: 'paused',
  /** The tick was delivered more than `maxTickAgeMs` after its scheduled time. */
  Late: 'late',
} as const
export type SkipReason = (typeof SkipReason)[keyof typeof SkipReason]

/** What every skip says: which lock, and which tick (when the event names one). */
export interface SkipResultBase {
  readonly skipped: true
  readonly key: string
  readonly tick: string | undefined
}

/**
 * Another run holds the lock. Always names it: a contender that lost the race for the write
 * reads the record once more to find the winner.
 */
export interface HeldSkipResult extends SkipResultBase {
  readonly reason: typeof SkipReason.Held
  /** The holder's owner (function name and request id, or host and pid), as in its record. */
  readonly owner: string
  /** The holder's fencing token. */
  readonly token: number
  /** Until when the holder's lease runs, ISO 8601 (by its record; a crashed holder's ends then). */
  readonly until: string
}

/** This tick already completed (or a later one did). */
export interface DuplicateSkipResult extends SkipResultBase {
  readonly reason: typeof SkipReason.Duplicate
  /** The owner in the record as read: the run that completed the tick, or one of a later tick. */
  readonly owner: string
  /** That owner's fencing token. */
  readonly token: number
  /** Not given: a duplicate is known from the record's last run, whoever may hold the lock now. */
  readonly until: undefined
}

/** The job is paused: no run until it is resumed (`lambda-singleton resume`). */
export interface PausedSkipResult extends SkipResultBase {
  /** `paused`. */
  readonly reason: typeof SkipReason.Paused
  /** Who paused it (an operator, or a run of the job itself: `pauseAfterFailures`), when and why. */
  readonly paused: PauseView
  /** The owner in the record as read: the last run's (or the operator's, after `pause --now`). */
  readonly owner: string
  /** The record's fencing token. */
  readonly token: number
  /** Not given: a paused job skips whoever may hold the lock. */
  readonly until: undefined
}

/**
 * The tick was delivered more than `maxTickAgeMs` after its scheduled time (a retry hours later,
 * a backlog drained): skipped without asking the store, so nobody is named.
 */
export interface LateSkipResult extends SkipResultBase {
  readonly reason: typeof SkipReason.Late
  /** The late tick: its scheduled time. */
  readonly tick: string
  /** How long after its scheduled time it was delivered, in ms, by the local clock. */
  readonly tickAgeMs: number
  /** The limit it passed (the `maxTickAgeMs` option). */
  readonly maxTickAgeMs: number
  /** Not given: the store was not read. */
  readonly owner: undefined
  /** Not given: the store was not read. */
  readonly token: undefined
  /** Not given: the store was not read. */
  readonly until: undefined
}

/** The response of an invocation that did not run its handler; `reason` tells which. */
export type SkipResult = HeldSkipResult | DuplicateSkipResult | LateSkipResult | PausedSkipResult

export function isSkipResult(value: unknown): value is SkipResult {
  return typeof value === 'object' && value !== null && (value as { skipped?: unknown }).skipped === true
}

export function skipResult(
  reason: typeof SkipReason.Held | typeof SkipReason.Duplicate,
  key: string,
  holder: LockRecord,
  tick: string | undefined,
): SkipResult {
  const common = { skipped: true, key, owner: holder.owner, token: holder.token, tick } as const
  return reason === SkipReason.Held
    ? { ...common, reason, until: isoFromSeconds(holder.expires_at) }
    : { ...common, reason, until: undefined }
}

/** The skip of a paused job, read as `record`. */
export function pausedSkipResult(
  key: string,
  record: LockRecord,
  paused: PauseRecord,
  tick: string | undefined,
): PausedSkipResult {
  return {
    skipped: true,
    key,
    tick,
    reason: SkipReason.Paused,
    paused: pauseView(paused),
    owner: record.owner,
    token: record.token,
    until: undefined,
  }
}

/** The answer to a late tick: which lock and tick, how late, and the limit. */
export function lateSkipResult(
  key: string,
  tick: string,
  tickAgeMs: number,
  maxTickAgeMs: number,
): LateSkipResult {
  return {
    skipped: true,
    reason: SkipReason.Late,
    key,
    tick,
    tickAgeMs,
    maxTickAgeMs,
    owner: undefined,
    token: undefined,
    until: undefined,
  }
}
