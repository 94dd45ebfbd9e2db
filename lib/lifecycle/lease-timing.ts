import type { Clock } from '../core/clock.js'
import { DEFAULT_TTL_MS, defaultHeartbeatMs } from '../core/timing.js'
import type { InvocationContext } from './handler-context.js'

export type RunTiming =
  /** A lease held to the end of the invocation: Lambda stops the holder then, so no heartbeat. */
  { readonly covers: 'invocation'; readonly invocationEnd: number } | RenewedTiming

/** A lease of `ttlMs`, renewed every `heartbeatMs`. */
export interface RenewedTiming {
  readonly covers: 'ttl'
  readonly ttlMs: number
  readonly heartbeatMs: number
  /** When the invocation ends, by the local clock (epoch ms), if the context tells. */
  readonly invocationEnd: number | undefined
}

/**
 * The lease for one invocation. By default it is held to the invocation's deadline, when Lambda
 * stops the holder whatever happens, so no heartbeat is needed and a crashed run frees the lock a
 * margin after its deadline; outside Lambda (no `getRemainingTimeInMillis`) there is no end to
 * cover, so a default lease with heartbeats. A configured `ttlMs` always wins, with its heartbeat.
 */
export function runTiming(
  configured: { ttlMs: number | undefined; heartbeatMs: number | undefined },
  context: InvocationContext,
  clock: Clock,
): RunTiming {
  const remaining =
    typeof context.getRemainingTimeInMillis === 'function'
      ? Math.max(0, context.getRemainingTimeInMillis())
      : undefined
  const invocationEnd = remaining === undefined ? undefined : clock.now() + remaining
  if (configured.ttlMs !== undefined) {
    // resolveOptions gives a configured ttl its default heartbeat already; this is for the type.
    const heartbeatMs = configured.heartbeatMs ?? defaultHeartbeatMs(configured.ttlMs)
    return { covers: 'ttl', ttlMs: configured.ttlMs, heartbeatMs, invocationEnd }
  }
  if (invocationEnd === undefined) {
    const ttlMs = DEFAULT_TTL_MS
    return { covers: 'ttl', ttlMs, heartbeatMs: defaultHeartbeatMs(ttlMs), invocationEnd }
  }
  return { covers: 'invocation', invocationEnd }
}

/** How the lock is asked for that lease. */
export function leaseRequest(timing: RunTiming): { ttlMs: number } | { holdUntil: number } {
  return timing.covers === 'invocation' ? { holdUntil: timing.invocationEnd } : { ttlMs: timing.ttlMs }
}
