import { MAX_DURATION_MS } from '../config.js'
import { LockOptionsError } from './errors.js'
import type { ServerTime } from './server-clock.js'

/** Lease length when none is given. */
export const DEFAULT_TTL_MS = 60_000
/** Disagreement allowed between clocks when none is given. */
export const DEFAULT_CLOCK_SKEW_MARGIN_MS = 2_000
/** Longer leases are a configuration mistake (and `expires_at` arithmetic stays far from limits). */
export const MAX_TTL_MS: number = MAX_DURATION_MS
/** Clocks that disagree by more than this are broken, not skewed. */
export const MAX_CLOCK_SKEW_MARGIN_MS = 10 * 60_000

/**
 * The timing of a lease, as asked for by any caller (core, lifecycle, adapters, CLI). What a
 * write makes of it, against the store's clock, is a `LeaseTerm`.
 */
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

/** A lease as one write sets it: what its record says, and when its holder stops. */
export interface LeaseTerm {
  /** What the record says: seconds since the epoch by the store's clock. */
  readonly expires_at: number
  /** When the holder must consider it over, by the local clock (epoch ms). */
  readonly deadline: number
  /** The store's time now, as best we know it (epoch ms). */
  readonly serverNow: number
  /** The lease's length, as recorded (`ttl_ms`) and renewed by default. */
  readonly ttlMs: number
}

// The lease arithmetic below takes `now`, the local time (epoch ms), and `server`, what we know
// of the store's clock at `now`: pure, so that every rule about when a lease ends is in one place.

/**
 * Whether a lease ending at `expiresAt` (seconds; 0 once released) is free to take for a
 * contender that knows the store's clock read at least `serverLower`: released, or expired by
 * the store's clock even if our clock ran late by the margin.
 */
export function isFreeToTake(expiresAt: number, serverLower: number, marginMs: number): boolean {
  return expiresAt === 0 || serverLower > expiresAt * 1000 + marginMs
}

/**
 * A lease of `ttlMs` from `now`. The record's `expires_at` is stamped from our best guess of the
 * store's clock (the middle of what we know of it), so that the lock frees neither late nor
 * early on average; the holder gives up its lease the margin, plus however far that guess may
 * be off, before then. So by the store's clock a holder is done by `expires_at - margin`,
 * whatever our guess, and contenders wait until `expires_at + margin`.
 */
export function leaseTermFor(ttlMs: number, now: number, server: ServerTime, marginMs: number): LeaseTerm {
  return {
    expires_at: Math.ceil(server.mid + ttlMs) / 1000,
    deadline: Math.floor(now + ttlMs - marginMs - server.halfWidth),
    serverNow: server.mid,
    ttlMs,
  }
}

/**
 * A new lease of `ttlMs` counted from its `token`, which is the latest the store's clock may
 * read now (or above): at the store it runs `ttlMs` after the store's clock passes the token, so
 * a holder that waits for its token (`Lease.fencingToken`) still has the lease's whole length
 * once it has it; a crashed holder's lock frees as late as if it had waited before writing.
 * Its `deadline` is what the estimate says at `now`.
 */
export function leaseTermFromToken(
  token: number,
  ttlMs: number,
  now: number,
  server: ServerTime,
  marginMs: number,
): LeaseTerm {
  const expires_at = (token + ttlMs) / 1000
  return {
    expires_at,
    deadline: holderDeadline(expires_at, now, server, marginMs),
    serverNow: server.mid,
    ttlMs,
  }
}

/**
 * A lease held until local time `until`, by a holder that is stopped by then anyway. Its
 * `expires_at` is the latest the store's clock can read at `until`, so no contender takes it
 * over before then, whatever our guess; the holder's own lease ends at `until`, no earlier.
 */
export function leaseTermUntil(until: number, now: number, server: ServerTime): LeaseTerm {
  const ttlMs = Math.ceil(until - now + server.halfWidth)
  return { expires_at: Math.ceil(server.mid + ttlMs) / 1000, deadline: until, serverNow: server.mid, ttlMs }
}

/**
 * When a holder must consider a lease that expires at `expiresAt` (seconds) over, by the local
 * clock: once the store's clock may have reached `expiresAt - margin`, however far our guess is off.
 */
export function holderDeadline(expiresAt: number, now: number, server: ServerTime, marginMs: number): number {
  return Math.floor(now + expiresAt * 1000 - marginMs - server.upper)
}
