import type { LockRecord } from '../core/record.js'

export const SkipReason = {
  /** Another run holds the lock. */
  Held: 'held',
  /** This tick already completed. */
  Duplicate: 'duplicate',
} as const
export type SkipReason = (typeof SkipReason)[keyof typeof SkipReason]

/** The response of an invocation that did not run its handler. */
export interface SkipResult {
  readonly skipped: true
  readonly reason: SkipReason
  readonly key: string
  /** The holder (held) or last holder (duplicate); undefined when a race was lost unread. */
  readonly holder: string | undefined
  /** The holder's fencing token. */
  readonly token: number | undefined
  /** Until when the holder's lease runs, ISO 8601 (held only). */
  readonly until: string | undefined
  readonly tick: string | undefined
}

export function isSkipResult(value: unknown): value is SkipResult {
  return typeof value === 'object' && value !== null && (value as { skipped?: unknown }).skipped === true
}

export function skipResult(
  reason: SkipReason,
  key: string,
  holder: LockRecord | undefined,
  tick: string | undefined,
): SkipResult {
  return {
    skipped: true,
    reason,
    key,
    holder: holder?.owner,
    token: holder?.token,
    until:
      reason === SkipReason.Held && holder ? new Date(holder.expires_at * 1000).toISOString() : undefined,
    tick,
  }
}
