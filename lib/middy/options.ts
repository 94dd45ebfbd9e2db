import type { S3Client } from '@aws-sdk/client-s3'
import type { Context } from 'aws-lambda'
import { DEFAULT_KEY_PREFIX, LOCK_ENV } from '../config.js'
import { LockOptionsError } from '../core/errors.js'
import { DEFAULT_CLOCK_SKEW_MARGIN_MS } from '../core/lock.js'
import { consoleLogger, type SingletonLogger } from './logger.js'
import type { OutcomeEvent } from './outcome.js'

/** Clocks that disagree by more than this are a configuration error, not skew. */
const MAX_MARGIN_MS = 30_000

/** What the middleware does when another run holds the lock. */
export const OnHeld = {
  /** End the invocation early with a `SkipResult`, without running the handler. */
  Skip: 'skip',
  /** Throw `LockHeldError`, so the invoker retries later. */
  Throw: 'throw',
} as const
export type OnHeld = (typeof OnHeld)[keyof typeof OnHeld]

export interface SingletonOptions<TEvent = unknown> {
  /** Bucket of the lock objects. @default process.env.LAMBDA_SINGLETON_BUCKET (set by the construct) */
  readonly bucket?: string
  /** Prefix of every lock key. @default process.env.LAMBDA_SINGLETON_KEY_PREFIX, else `locks/` */
  readonly keyPrefix?: string
  /**
   * The lock's name below the prefix; a function of the invocation for per-tenant or
   * per-entity singletons. @default the function's name
   */
  readonly key?: string | ((event: TEvent, context: Context) => string)
  /** @default a shared client from the environment, one attempt per call */
  readonly s3?: S3Client
  /** @default 'skip' */
  readonly onHeld?: OnHeld
  /** Wait up to this long for a held lock before `onHeld` applies, in ms. @default 0 */
  readonly waitMs?: number
  /**
   * Lease length with heartbeats. Without it the lease covers the whole invocation
   * (remaining time + margin) and needs no heartbeat; with it, a crashed run frees the lock
   * within `ttlMs`. @default undefined: cover the invocation
   */
  readonly ttlMs?: number
  /** Renewal period when `ttlMs` is set. @default ttlMs / 3 */
  readonly heartbeatMs?: number
  /** @default 2000 */
  readonly clockSkewMarginMs?: number
  /**
   * The tick an event stands for, for per-tick dedupe; `false` turns dedupe off.
   * @default EventBridge Scheduler `scheduledTime` (construct payload) or a rule's `time`
   */
  readonly tickId?: false | ((event: TEvent, context: Context) => string | undefined)
  /** @default one JSON line per outcome on the console */
  readonly logger?: SingletonLogger
  /** Called once per outcome, e.g. to emit a metric. Must not throw. */
  readonly onOutcome?: (event: OutcomeEvent) => void
  /**
   * Fail the invocation when the release finds that the lease was lost. Off by default: the
   * work is done, and a retry would do it again; the loss is logged as an error either way.
   * @default false
   */
  readonly throwOnLost?: boolean
  /** Timeout of each S3 request, in ms. @default 5000 */
  readonly requestTimeoutMs?: number
}

export interface ResolvedOptions<TEvent> {
  readonly bucket: string
  readonly keyPrefix: string
  readonly key: string | ((event: TEvent, context: Context) => string) | undefined
  readonly s3: S3Client | undefined
  readonly onHeld: OnHeld
  readonly waitMs: number
  readonly ttlMs: number | undefined
  readonly heartbeatMs: number | undefined
  readonly clockSkewMarginMs: number
  readonly tickId: false | ((event: TEvent, context: Context) => string | undefined) | undefined
  readonly logger: SingletonLogger
  readonly onOutcome: ((event: OutcomeEvent) => void) | undefined
  readonly throwOnLost: boolean
  readonly requestTimeoutMs: number | undefined
}

/** Merges the defaults with `options` and refuses what can never work, once, at `singleton()` time. */
export function resolveOptions<TEvent>(options: SingletonOptions<TEvent>): ResolvedOptions<TEvent> {
  const fail = (message: string): never => {
    throw new LockOptionsError(`singleton(): ${message}`)
  }
  const bucket = options.bucket ?? process.env[LOCK_ENV.bucket]
  if (!bucket) fail(`no bucket: pass { bucket } or set ${LOCK_ENV.bucket} (the construct sets it)`)
  const keyPrefix = options.keyPrefix ?? process.env[LOCK_ENV.keyPrefix] ?? DEFAULT_KEY_PREFIX
  const { key, waitMs = 0, ttlMs, clockSkewMarginMs = DEFAULT_CLOCK_SKEW_MARGIN_MS } = options
  if (key !== undefined && typeof key !== 'function' && (typeof key !== 'string' || key.length === 0)) {
    fail('key must be a non-empty string or a function (event, context) => string')
  }
  const onHeld = options.onHeld ?? OnHeld.Skip
  if (!Object.values(OnHeld).includes(onHeld)) fail(`onHeld must be 'skip' or 'throw', got ${String(onHeld)}`)
  if (!Number.isFinite(waitMs) || waitMs < 0) fail(`waitMs must be a finite number >= 0, got ${waitMs}`)
  if (!Number.isFinite(clockSkewMarginMs) || clockSkewMarginMs < 0 || clockSkewMarginMs > MAX_MARGIN_MS) {
    fail(`clockSkewMarginMs must be a finite number in [0, ${MAX_MARGIN_MS}], got ${clockSkewMarginMs}`)
  }
  if (ttlMs !== undefined && (!Number.isFinite(ttlMs) || ttlMs <= clockSkewMarginMs)) {
    fail(`ttlMs must be a finite number above clockSkewMarginMs (${clockSkewMarginMs}), got ${ttlMs}`)
  }
  const heartbeatMs = ttlMs === undefined ? undefined : (options.heartbeatMs ?? Math.floor(ttlMs / 3))
  if (options.heartbeatMs !== undefined && ttlMs === undefined) fail('heartbeatMs needs ttlMs')
  if (heartbeatMs !== undefined && ttlMs !== undefined) {
    if (!Number.isFinite(heartbeatMs) || heartbeatMs <= 0 || heartbeatMs >= ttlMs - clockSkewMarginMs) {
      fail(`heartbeatMs must be positive and below ttlMs - clockSkewMarginMs, got ${heartbeatMs}`)
    }
  }
  if (options.tickId !== undefined && options.tickId !== false && typeof options.tickId !== 'function') {
    fail('tickId must be a function or false')
  }
  return {
    bucket: bucket as string,
    keyPrefix,
    key,
    s3: options.s3,
    onHeld,
    waitMs,
    ttlMs,
    heartbeatMs,
    clockSkewMarginMs,
    tickId: options.tickId,
    logger: options.logger ?? consoleLogger,
    onOutcome: options.onOutcome,
    throwOnLost: options.throwOnLost ?? false,
    requestTimeoutMs: options.requestTimeoutMs,
  }
}
