import {
  DEFAULT_KEY_PREFIX,
  keyPrefixProblem,
  LOCK_ENV,
  maxTickAgeProblem,
  pauseAfterFailuresProblem,
} from '../config.js'
import type { Clock } from '../core/clock.js'
import { LockOptionsError } from '../core/errors.js'
import type { RunRecorder } from '../core/lock-options.js'
import type { LockStore } from '../core/store.js'
import {
  DEFAULT_CLOCK_SKEW_MARGIN_MS,
  DEFAULT_TTL_MS,
  defaultHeartbeatMs,
  validateTiming,
} from '../core/timing.js'
import { DEFAULT_HISTORY_SIZE, keepHistory, validateHistorySize } from '../schedule/history.js'
import { environmentStoreKind } from './default-store.js'
import type { InvocationContext, LambdaContext } from './handler-context.js'
import { consoleLogger, type SingletonLogger, silentLogger } from './logger.js'
import { type SingletonMetricsOptions, validateMetrics } from './metrics.js'
import type { OutcomeEvent } from './outcome.js'

/** What a run does when another run holds the lock. */
export const OnHeld = {
  /** End the invocation early with a `SkipResult`, without running the handler. */
  Skip: 'skip',
  /** Fail the invocation with `LockHeldError`, so the invoker retries later (exec: exit 7). */
  Fail: 'fail',
  /** @deprecated The former name of `'fail'`, read as it. */
  Throw: 'throw',
  /**
   * When this invocation's tick is newer than the holder's, take the lock from it: the holder's
   * signal aborts (`LockLostError`, reason `replaced`) at its next heartbeat, and its renewals,
   * release and fenced writes are refused from then on. Otherwise (no tick, the same or an older
   * tick, ticks that are not times, a holder whose tick is not known) skip, as `skip` does.
   */
  Replace: 'replace',
} as const
export type OnHeld = (typeof OnHeld)[keyof typeof OnHeld]

/** Options of `singleton()` and `withSingleton()`: the same run lifecycle behind both. */
export interface SingletonOptions<TEvent = unknown, TContext extends InvocationContext = LambdaContext> {
  /**
   * Where lock records live: `S3LockStore` (`lambda-singleton/s3`), `DynamoDBLockStore`
   * (`lambda-singleton/dynamodb`), `MemoryLockStore` for unit tests (`lambda-singleton/memory`),
   * or any `LockStore`.
   * @default the store the environment names (set by the constructs), built at the first
   * invocation: an `S3LockStore` on `LAMBDA_SINGLETON_BUCKET`, or a `DynamoDBLockStore` on
   * `LAMBDA_SINGLETON_TABLE` (`LAMBDA_SINGLETON_STORE` says which when both are set)
   */
  readonly store?: LockStore
  /** Prefix of every lock key. @default process.env.LAMBDA_SINGLETON_KEY_PREFIX, else `locks/` */
  readonly keyPrefix?: string
  /**
   * The lock's name below the prefix; a function of the invocation for per-tenant or
   * per-entity singletons. @default the function's name
   */
  readonly key?: string | ((event: TEvent, context: TContext) => string)
  /**
   * What to do when another run holds the lock: skip, throw, or replace it when this tick is
   * newer (a replaceable lease is renewed: `ttlMs` defaults to 60 s with it, and the replaced
   * run learns of it within `heartbeatMs` plus a round trip). @default 'skip'
   */
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
  readonly tickId?: false | ((event: TEvent, context: TContext) => string | undefined)
  /**
   * Skip a tick delivered more than this long after its scheduled time, in ms: a retry of a
   * failed run or a throttled delivery that comes hours later (Lambda retries asynchronous
   * invocations for up to 6 hours) is answered with a `late` skip, without asking the store.
   * Judged by the local clock against the tick's time (the event's `scheduledTime`, a rule's
   * `time`, or what `tickId` returns, when it is an ISO 8601 time); an event without a tick, or
   * whose tick is not a time, is never late, nor is a tick in the future.
   * @default process.env.LAMBDA_SINGLETON_MAX_TICK_AGE_MS (the constructs' `maxTickAge`), else
   *   no limit
   */
  readonly maxTickAgeMs?: number
  /** `false` says nothing, as `metrics: false` writes no metric. @default one JSON line per outcome on the console */
  readonly logger?: SingletonLogger | false
  /** Called once per outcome, e.g. to emit a metric. An error it throws is logged and changes nothing of the run. */
  readonly onOutcome?: (event: OutcomeEvent) => void
  /**
   * CloudWatch metrics as Embedded Metric Format lines on standard output: `true`, or a
   * namespace and where to write; `false` keeps them off even when the environment asks.
   * @default off, unless LAMBDA_SINGLETON_METRICS_NAMESPACE is set (the constructs' `metrics`)
   */
  readonly metrics?: boolean | SingletonMetricsOptions
  /**
   * Fail the invocation when the lease turns out lost. Off by default: the work is done, and a
   * retry would do it again; the loss is logged as an error either way. @default false
   */
  readonly throwOnLost?: boolean
  /**
   * Pause the job after this many failed runs in a row (the handler threw), until an operator
   * resumes it (`lambda-singleton resume`). The count lives in the lock record and is written by
   * each run's release, at no extra request; a completed run clears it. The pause says why in
   * the record, in a log line and in the `Paused` metric. @default undefined: never pause
   */
  readonly pauseAfterFailures?: number
  /**
   * Keep the last this many runs in the lock record's `history` (token, tick, owner, started,
   * ended, outcome), for `lambda-singleton history`: written by each run's release, and by the
   * acquisition that takes over a run that never released (`abandoned`), at no extra request.
   * 0 writes none. @default 10
   */
  readonly historySize?: number
  /** The local clock, for tests on simulated time. @default the system clock */
  readonly clock?: Clock
}

export interface ResolvedOptions<TEvent, TContext> {
  readonly store: LockStore | undefined
  readonly keyPrefix: string
  readonly key: string | ((event: TEvent, context: TContext) => string) | undefined
  readonly onHeld: OnHeld
  readonly waitMs: number
  readonly ttlMs: number | undefined
  readonly heartbeatMs: number | undefined
  readonly clockSkewMarginMs: number
  readonly tickId: false | ((event: TEvent, context: TContext) => string | undefined) | undefined
  readonly maxTickAgeMs: number | undefined
  readonly logger: SingletonLogger
  readonly onOutcome: ((event: OutcomeEvent) => void) | undefined
  readonly metrics: boolean | SingletonMetricsOptions | undefined
  readonly throwOnLost: boolean
  readonly pauseAfterFailures: number | undefined
  /** What each run's lock keeps of it: its last `historySize` runs (`keepHistory`), made once. */
  readonly recordRun: RunRecorder
  readonly clock: Clock | undefined
}

/** Merges the defaults with `options` and refuses what can never work, once, when the adapter is made. */
export function resolveOptions<TEvent, TContext extends InvocationContext>(
  options: SingletonOptions<TEvent, TContext>,
  where: string,
): ResolvedOptions<TEvent, TContext> {
  const fail = (message: string): never => {
    throw new LockOptionsError(`${where}: ${message}`)
  }
  const { key, store, waitMs = 0, clockSkewMarginMs = DEFAULT_CLOCK_SKEW_MARGIN_MS } = options
  const keyPrefix = resolveKeyPrefix(options.keyPrefix, store, fail)
  if (key !== undefined && typeof key !== 'function' && (typeof key !== 'string' || key.length === 0)) {
    fail('key must be a non-empty string or a function (event, context) => string')
  }
  if (store !== undefined && !isStore(store)) fail('store must be a LockStore (read, create, replace)')
  const onHeld = resolveOnHeld(options.onHeld, fail)
  // A run that may be replaced must hear of it while it runs: its lease is renewed, never held
  // silently to the invocation's end.
  const ttlMs = options.ttlMs ?? (onHeld === OnHeld.Replace ? DEFAULT_TTL_MS : undefined)
  // The default heartbeat is checked like a given one: a ttl too short for it can never work.
  const heartbeatMs = options.heartbeatMs ?? (ttlMs === undefined ? undefined : defaultHeartbeatMs(ttlMs))
  validateTiming(
    {
      ttlMs,
      clockSkewMarginMs: options.clockSkewMarginMs,
      waitMs,
      heartbeatMs,
      heartbeatIsDefault: options.heartbeatMs === undefined,
    },
    where,
  )
  if (options.tickId !== undefined && options.tickId !== false && typeof options.tickId !== 'function') {
    fail('tickId must be a function or false')
  }
  validateMetrics(options.metrics, where)
  if (options.onOutcome !== undefined && typeof options.onOutcome !== 'function') {
    fail('onOutcome must be a function (event) => void')
  }
  const { pauseAfterFailures } = options
  if (pauseAfterFailures !== undefined) checkPauseAfterFailures(pauseAfterFailures, fail)
  validateHistorySize(options.historySize, 'historySize', fail)
  const maxTickAgeMs = resolveMaxTickAge(options.maxTickAgeMs, fail)
  return {
    store,
    keyPrefix,
    key,
    onHeld,
    waitMs,
    ttlMs,
    heartbeatMs,
    clockSkewMarginMs,
    tickId: options.tickId,
    maxTickAgeMs,
    logger: loggerOf(options.logger, fail),
    onOutcome: options.onOutcome,
    metrics: options.metrics,
    throwOnLost: options.throwOnLost ?? false,
    pauseAfterFailures,
    recordRun: keepHistory(options.historySize ?? DEFAULT_HISTORY_SIZE),
    clock: options.clock,
  }
}

/** The `keyPrefix` option, else the environment's, else the default; refused when no store could use it. */
function resolveKeyPrefix(
  given: string | undefined,
  store: unknown,
  fail: (message: string) => never,
): string {
  const keyPrefix: unknown = given ?? process.env[LOCK_ENV.keyPrefix] ?? DEFAULT_KEY_PREFIX
  if (typeof keyPrefix !== 'string') return fail(`keyPrefix must be a string, got ${typeof keyPrefix}`)
  // The leading-slash rule is S3's: checked when the environment names the store (a given one may be either).
  const problem = keyPrefixProblem(keyPrefix, store === undefined ? environmentStoreKind() : undefined)
  if (problem)
    fail(`${sourceOf(given, 'keyPrefix', LOCK_ENV.keyPrefix)} ${JSON.stringify(keyPrefix)} ${problem}`)
  return keyPrefix
}

/** The `onHeld` option (default skip); `throw`, the former name of `fail`, is read as it. */
function resolveOnHeld(given: OnHeld | undefined, fail: (message: string) => never): OnHeld {
  const onHeld = given ?? OnHeld.Skip
  if (!Object.values(OnHeld).includes(onHeld)) {
    fail(`onHeld must be 'skip', 'fail' or 'replace', got ${String(onHeld)}`)
  }
  return onHeld === OnHeld.Throw ? OnHeld.Fail : onHeld
}

function checkPauseAfterFailures(value: number, fail: (message: string) => never): void {
  const problem = pauseAfterFailuresProblem(value)
  if (problem) fail(`pauseAfterFailures ${problem}, got ${JSON.stringify(value) ?? String(value)}`)
}

/** The `maxTickAgeMs` option, else the environment's; refused unless a finite number of ms above 0. */
function resolveMaxTickAge(given: unknown, fail: (message: string) => never): number | undefined {
  const fromEnv = process.env[LOCK_ENV.maxTickAgeMs] || undefined
  if (given === undefined && fromEnv === undefined) return undefined
  const value = given ?? Number(fromEnv)
  const problem = maxTickAgeProblem(value)
  if (problem) {
    const source = sourceOf(given, 'maxTickAgeMs', LOCK_ENV.maxTickAgeMs)
    const shown =
      given === undefined
        ? JSON.stringify(fromEnv)
        : typeof given === 'number'
          ? String(given)
          : `${JSON.stringify(given) ?? String(given)} (a ${typeof given})`
    fail(`${source} ${problem}, got ${shown}`)
  }
  return value as number
}

/** Where a setting came from, for a message: the option when given, else its environment variable. */
function sourceOf(given: unknown, option: string, variable: string): string {
  return given === undefined ? `${variable} (from the environment)` : option
}

function isStore(value: unknown): value is LockStore {
  const store = value as Partial<LockStore>
  return (
    typeof store === 'object' &&
    typeof store.read === 'function' &&
    typeof store.create === 'function' &&
    typeof store.replace === 'function'
  )
}

/** The logger a run writes to: the one given, none for `false` (`silentLogger`), else the console. */
function loggerOf(
  logger: SingletonLogger | false | undefined,
  fail: (message: string) => never,
): SingletonLogger {
  if (logger === undefined) return consoleLogger
  if (logger === false) return silentLogger
  const isLogger =
    typeof logger === 'object' &&
    logger !== null &&
    (['info', 'warn', 'error'] as const).every((level) => typeof logger[level] === 'function')
  if (!isLogger) fail('logger must be a SingletonLogger (info, warn, error) or false')
  return logger
}
