import type { Clock } from '../core/clock.js'
import { DEFAULT_TTL_MS, defaultHeartbeatMs } from '../core/timing.js'
import type { InvocationContext } from './context.js'

/** Extra lease time past the end of the invocation, so the lease never ends before Lambda stops us. */
export const INVOCATION_COVER_MS = 1_000

export interface RunTiming {
  readonly ttlMs: number
  /** Renewal period; undefined when the lease covers the whole invocation and needs none. */
  readonly heartbeatMs: number | undefined
  /** When the invocation ends, by the local clock (epoch ms), if the context tells. */
  readonly invocationEnd: number | undefined
}

/**
 * The lease for one invocation. By default it covers the rest of the invocation, so no heartbeat
 * is needed; outside Lambda (no `getRemainingTimeInMillis`) there is no end to cover, so a
 * default lease with heartbeats. A configured `ttlMs` always wins, with its heartbeat.
 */
export function runTiming(
  configured: { ttlMs: number | undefined; heartbeatMs: number | undefined; clockSkewMarginMs: number },
  context: InvocationContext,
  clock: Clock,
): RunTiming {
  const remaining =
    typeof context.getRemainingTimeInMillis === 'function'
      ? Math.max(0, context.getRemainingTimeInMillis())
      : undefined
  const invocationEnd = remaining === undefined ? undefined : clock.now() + remaining
  if (configured.ttlMs !== undefined) {
    return { ttlMs: configured.ttlMs, heartbeatMs: configured.heartbeatMs, invocationEnd }
  }
  if (remaining === undefined) {
    return { ttlMs: DEFAULT_TTL_MS, heartbeatMs: defaultHeartbeatMs(DEFAULT_TTL_MS), invocationEnd }
  }
  return {
    ttlMs: remaining + configured.clockSkewMarginMs + INVOCATION_COVER_MS,
    heartbeatMs: undefined,
    invocationEnd,
  }
}
