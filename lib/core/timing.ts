import { LockOptionsError } from './errors.js'

/** Lease length when none is given. */
export const DEFAULT_TTL_MS = 60_000
/** Disagreement allowed between clocks when none is given. */
export const DEFAULT_CLOCK_SKEW_MARGIN_MS = 2_000
/** Longer leases are a configuration mistake (and `expires_at` arithmetic stays far from limits). */
export const MAX_TTL_MS = 7 * 24 * 3_600_000
/** Clocks that disagree by more than this are broken, not skewed. */
export const MAX_CLOCK_SKEW_MARGIN_MS = 10 * 60_000

/** The timing of a lease, as asked for by any caller (core, lifecycle, adapters, CLI). */
export interface LeaseTiming {
  readonly ttlMs?: number
  readonly clockSkewMarginMs?: number
  /** Renewal period; needs `ttlMs`. */
  readonly heartbeatMs?: number
  /**
   * `heartbeatMs` is the default (a third of `ttlMs`), not the caller's: a refusal then names
   * what the caller did set (`ttlMs`, the margin) and what to change, not a value never written.
   */
  readonly heartbeatIsDefault?: boolean
  /** How long to wait for a held lock. */
  readonly waitMs?: number
}

/**
 * The one place where timing rules live, so every entry point refuses the same things with the
 * same words. Throws `LockOptionsError`, prefixed with `where` (e.g. `singleton()`).
 */
export function validateTiming(timing: LeaseTiming, where: string, key?: string): void {
  const fail = (message: string): never => {
    throw new LockOptionsError(`${where}: ${message}`, { key })
  }
  const { ttlMs, heartbeatMs, waitMs } = timing
  const margin = timing.clockSkewMarginMs ?? DEFAULT_CLOCK_SKEW_MARGIN_MS
  if (!Number.isFinite(margin) || margin < 0 || margin > MAX_CLOCK_SKEW_MARGIN_MS) {
    fail(`clockSkewMarginMs must be a finite number in [0, ${MAX_CLOCK_SKEW_MARGIN_MS}], got ${margin}`)
  }
  if (ttlMs !== undefined && !(Number.isFinite(ttlMs) && ttlMs > margin && ttlMs <= MAX_TTL_MS)) {
    fail(
      `ttlMs must be a finite number above clockSkewMarginMs (${margin}) and at most ${MAX_TTL_MS}, got ${ttlMs}`,
    )
  }
  if (heartbeatMs !== undefined) {
    if (ttlMs === undefined) fail('heartbeatMs needs ttlMs')
    const room = (ttlMs as number) - margin
    if (!(Number.isFinite(heartbeatMs) && heartbeatMs > 0 && heartbeatMs < room)) {
      const marginSaid = `clockSkewMarginMs ${margin}${timing.clockSkewMarginMs === undefined ? ', the default' : ''}`
      fail(
        timing.heartbeatIsDefault
          ? `ttlMs ${ttlMs} leaves ${room} ms above the clock-skew margin (${marginSaid}): the default ` +
              `heartbeat, a third of ttlMs (${heartbeatMs} ms), does not fit in it; raise ttlMs to at ` +
              `least ${minTtlForDefaultHeartbeat(margin)}, lower clockSkewMarginMs, or set heartbeatMs below ${room}`
          : `heartbeatMs must be positive and below ttlMs - clockSkewMarginMs (${ttlMs} - ${margin} = ${room} ms), got ${heartbeatMs}`,
      )
    }
  }
  if (waitMs !== undefined && !(Number.isFinite(waitMs) && waitMs >= 0)) {
    fail(`waitMs must be a finite number >= 0, got ${waitMs}`)
  }
}

/** The default renewal period: three tries before the lease would run out. */
export function defaultHeartbeatMs(ttlMs: number): number {
  return Math.floor(ttlMs / 3)
}

/** The shortest ttl whose default heartbeat is positive and below ttl - margin (about 1.5 margins). */
export function minTtlForDefaultHeartbeat(margin: number): number {
  let ttlMs = Math.max(3, Math.floor(margin * 1.5) - 2)
  while (!(defaultHeartbeatMs(ttlMs) > 0 && defaultHeartbeatMs(ttlMs) < ttlMs - margin)) ttlMs++
  return ttlMs
}
