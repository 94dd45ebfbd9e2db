import { randomUUID } from 'node:crypto'
import type { MiddlewareObj, Request } from '@middy/core'
import type { Context } from 'aws-lambda'
import { LockLostError, LockOptionsError, LockTimeoutError } from '../core/errors.js'
import type { Lease } from '../core/lease.js'
import { DEFAULT_TTL_MS } from '../core/lock.js'
import type { JsonValue, LockRecord } from '../core/record.js'
import { S3Lock } from '../s3/s3-lock.js'
import { LockHeldError } from './errors.js'
import { startHeartbeat } from './heartbeat.js'
import { OnHeld, type ResolvedOptions, resolveOptions, type SingletonOptions } from './options.js'
import { Outcome, type OutcomeEvent } from './outcome.js'
import { isTickDone, tickIdOf } from './tick.js'

/** What the handler finds on `context.singleton`. */
export interface SingletonState {
  /** The lock object's key. */
  readonly key: string
  /** The fencing token: pass it with every write, so a target can refuse a stale run. */
  readonly token: number
  /** When the lease ends, by this process's clock (already shortened by the skew margin). */
  readonly expiresAt: Date
  /** Aborted when the lease is lost, or released because the invocation ended or timed out. */
  readonly signal: AbortSignal
  readonly lease: Lease
  /** The last checkpoint written by this or an earlier run, e.g. where a crashed run stopped. */
  readonly state: JsonValue | undefined
  /** Stores a small JSON state in the lock object for the next run (same token, conditional). */
  checkpoint(state: JsonValue): Promise<void>
  /** The tick this invocation stands for, when the event tells. */
  readonly tick: string | undefined
}

/** The Lambda context as the handler sees it behind `singleton()`. */
export type SingletonContext = Context & { singleton: SingletonState }

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
  /** The holder (held) or last holder (duplicate). */
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

/** Extra lease time past the end of the invocation, so the lease never ends before Lambda stops us. */
const INVOCATION_COVER_MS = 1_000
/** Locks kept per middleware (per key), so warm invocations re-acquire with one request. */
const MAX_CACHED_LOCKS = 256

interface InFlight {
  readonly key: string
  readonly lease: Lease
  readonly tick: string | undefined
  readonly controller: AbortController
  /** When the invocation ends (epoch ms), if the context tells. */
  readonly invocationEnd: number | undefined
  stopHeartbeat: (() => void) | undefined
  lostReported: boolean
}

/**
 * Middy middleware: runs the handler only while holding the S3 lease for its key, at most one
 * run at a time across all concurrent invocations, retries and regions that share the bucket.
 */
export function singleton<TEvent = unknown, TResult = unknown>(
  options: SingletonOptions<TEvent> = {},
): MiddlewareObj<TEvent, TResult | SkipResult, Error, SingletonContext> {
  const config = resolveOptions(options)
  const locks = new Map<string, S3Lock>()
  // Per-request state lives beside the request, not on it: nothing else can clobber it.
  const inFlight = new WeakMap<object, InFlight>()
  // The same leases, to find any whose after/onError Middy skipped (see sweepAbandoned).
  const active = new Set<InFlight>()

  const report = (level: 'info' | 'warn' | 'error', message: string, event: OutcomeEvent): void => {
    const { error, ...fields } = event
    config.logger[level](message, { ...fields, ...(error && { error }), component: 'lambda-singleton' })
    config.onOutcome?.(event)
  }

  const lockFor = (key: string): S3Lock => {
    let lock = locks.get(key)
    if (!lock) {
      if (locks.size >= MAX_CACHED_LOCKS) locks.delete(locks.keys().next().value as string)
      lock = new S3Lock({
        bucket: config.bucket,
        key,
        clockSkewMarginMs: config.clockSkewMarginMs,
        ...(config.s3 && { s3: config.s3 }),
        ...(config.requestTimeoutMs !== undefined && { requestTimeoutMs: config.requestTimeoutMs }),
      })
      locks.set(key, lock)
    }
    return lock
  }

  const before = async (
    request: Request<TEvent, TResult | SkipResult, Error, SingletonContext>,
  ): Promise<SkipResult | undefined> => {
    const { event, context } = request
    await sweepAbandoned()
    const key = keyOf(config, event, context)
    const tick = config.tickId === false ? undefined : (config.tickId?.(event, context) ?? tickIdOf(event))
    const lock = lockFor(key)
    // One owner per invocation: the request id, which a retry of the same invocation keeps.
    const owner =
      context.functionName && context.awsRequestId
        ? `${context.functionName}/${context.awsRequestId}`
        : `${context.functionName || 'local'}/${randomUUID()}`
    const { ttlMs, heartbeatMs } = leaseTiming(config, context)
    // A tick that already ran is recognised from the record as read: nothing is written for it.
    const done = tick === undefined ? undefined : (record: LockRecord) => isTickDone(tick, record.last_run)
    const acquireOptions = { ttlMs, owner, ...(done && { skipIf: done }) }

    let lease: Lease | null
    try {
      lease =
        config.waitMs > 0
          ? await lock.acquire({ ...acquireOptions, waitMs: config.waitMs }).catch((error: unknown) => {
              if (error instanceof LockTimeoutError) return null
              throw error
            })
          : await lock.tryAcquire(acquireOptions)
    } catch (error) {
      report('error', 'lock could not be acquired', {
        outcome: Outcome.Error,
        key,
        ...(tick && { tick }),
        error: asError(error),
      })
      throw error
    }

    if (!lease) {
      // A lost race for the write leaves no record read: one more read names the winner.
      const holder = lock.lastSeen ?? (await lock.inspect().catch(() => null))?.record
      if (holder && done?.(holder)) {
        report('info', 'skipped: tick already completed', {
          outcome: Outcome.Duplicate,
          key,
          token: holder.token,
          tick,
        })
        return skipResult(SkipReason.Duplicate, key, holder, tick)
      }
      report('info', 'skipped: lock held by another run', {
        outcome: Outcome.Skipped,
        key,
        ...(holder && { token: holder.token, owner: holder.owner }),
        ...(tick && { tick }),
      })
      if (config.onHeld === OnHeld.Throw) {
        throw new LockHeldError(`Lock "${key}" is held by ${holder?.owner ?? 'another run'}`, {
          key,
          ...(holder && { holder }),
        })
      }
      return skipResult(SkipReason.Held, key, holder, tick)
    }

    const controller = new AbortController()
    const invocationEnd =
      typeof context.getRemainingTimeInMillis === 'function'
        ? Date.now() + context.getRemainingTimeInMillis()
        : undefined
    const flight: InFlight = {
      key,
      lease,
      tick,
      controller,
      invocationEnd,
      stopHeartbeat: undefined,
      lostReported: false,
    }
    lease.signal.addEventListener('abort', () => controller.abort(lease.signal.reason), { once: true })
    if (heartbeatMs !== undefined) {
      flight.stopHeartbeat = startHeartbeat(lease, {
        everyMs: heartbeatMs,
        ttlMs,
        stopAt: invocationEnd,
        onLost: (error) => {
          reportLost(flight, error)
          controller.abort(error)
        },
        onError: (error) =>
          report('warn', 'heartbeat failed; retrying', {
            outcome: Outcome.Error,
            key,
            token: lease.token,
            error: asError(error),
          }),
      })
    }
    inFlight.set(request, flight)
    active.add(flight)
    context.singleton = {
      key,
      token: lease.token,
      get expiresAt() {
        return lease.expiresAt
      },
      signal: controller.signal,
      lease,
      state: lease.record.state,
      checkpoint: (state) => lease.checkpoint(state),
      tick,
    }
    report('info', 'lock acquired', {
      outcome: Outcome.Acquired,
      key,
      token: lease.token,
      owner: lease.owner,
      ...(tick && { tick }),
    })
    return undefined
  }

  const reportLost = (flight: InFlight, error: LockLostError): void => {
    if (flight.lostReported) return
    flight.lostReported = true
    report('error', 'LEASE LOST: another run may have overlapped this one; only fenced writes are safe', {
      outcome: Outcome.Lost,
      key: flight.key,
      token: flight.lease.token,
      ...(error.current && { owner: error.current.owner }),
      ...(flight.tick && { tick: flight.tick }),
      error,
    })
  }

  const finish = (
    request: Request<TEvent, TResult | SkipResult, Error, SingletonContext>,
    succeeded: boolean,
  ): Promise<void> => {
    const flight = inFlight.get(request)
    if (!flight) return Promise.resolve()
    inFlight.delete(request)
    return end(flight, succeeded)
  }

  const end = async (flight: InFlight, succeeded: boolean): Promise<void> => {
    active.delete(flight)
    flight.stopHeartbeat?.()
    const { lease, key, tick } = flight
    // Stop the handler first: if it is still running (an early timeout), it must not go on
    // working while the next holder starts.
    flight.controller.abort(new Error(`lease on "${key}" ended with the invocation`))
    if (lease.isLost) {
      // Nothing to release. Report it here too: the heartbeat that found it may have been stopped
      // before it could (reporting twice is prevented).
      reportLost(flight, lease.signal.reason as LockLostError)
      if (succeeded && config.throwOnLost) throw lease.signal.reason
      return
    }
    try {
      await lease.release(succeeded && tick !== undefined ? { lastRun: tick } : {})
      report('info', 'lock released', {
        outcome: Outcome.Released,
        key,
        token: lease.token,
        ...(tick && { tick }),
      })
    } catch (error) {
      if (error instanceof LockLostError) {
        reportLost(flight, error)
        if (succeeded && config.throwOnLost) throw error
      } else {
        // The lease stays until it expires; the next run waits that long, nothing worse.
        report('error', 'lock could not be released; it will expire', {
          outcome: Outcome.Error,
          key,
          token: lease.token,
          error: asError(error),
        })
      }
    }
  }

  /**
   * Middy skips this middleware's `after` and `onError` when a middleware used after it ends
   * the request early. In Lambda one invocation runs at a time, so a lease whose invocation is
   * over by the clock was abandoned that way: release it now rather than leave it held.
   */
  const sweepAbandoned = async (): Promise<void> => {
    const now = Date.now()
    for (const flight of active) {
      if (flight.invocationEnd === undefined || flight.invocationEnd > now) continue
      report('warn', 'released a lease whose invocation ended without after/onError (use singleton() last)', {
        outcome: Outcome.Error,
        key: flight.key,
        token: flight.lease.token,
      })
      await end(flight, false).catch(() => undefined)
    }
  }

  return {
    name: 'lambda-singleton',
    before,
    after: (request) => finish(request, true),
    onError: (request) => finish(request, false),
  }
}

function keyOf<TEvent>(config: ResolvedOptions<TEvent>, event: TEvent, context: Context): string {
  const name =
    typeof config.key === 'function' ? config.key(event, context) : (config.key ?? context.functionName)
  if (typeof name !== 'string' || name.length === 0) {
    throw new LockOptionsError(
      typeof config.key === 'function'
        ? `singleton(): the key function returned ${JSON.stringify(name)}; it must return a non-empty string`
        : 'singleton(): no key: pass { key } or run inside Lambda, where the function name is the default',
    )
  }
  return `${config.keyPrefix}${name}`
}

/**
 * By default the lease covers the rest of the invocation, so no heartbeat is needed. Outside
 * Lambda (no `getRemainingTimeInMillis`) there is no end to cover: a default TTL with heartbeats.
 */
function leaseTiming<TEvent>(
  config: ResolvedOptions<TEvent>,
  context: Context,
): { ttlMs: number; heartbeatMs: number | undefined } {
  if (config.ttlMs !== undefined) return { ttlMs: config.ttlMs, heartbeatMs: config.heartbeatMs }
  if (typeof context.getRemainingTimeInMillis !== 'function') {
    return { ttlMs: DEFAULT_TTL_MS, heartbeatMs: Math.floor(DEFAULT_TTL_MS / 3) }
  }
  const remaining = Math.max(0, context.getRemainingTimeInMillis())
  return { ttlMs: remaining + config.clockSkewMarginMs + INVOCATION_COVER_MS, heartbeatMs: undefined }
}

function skipResult(
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

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error))
}
