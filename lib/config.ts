/**
 * The contract between the CDK construct (which sets these) and the middleware (which reads them).
 * Kept in one place so the two halves cannot drift apart.
 */
export const LOCK_ENV = {
  /** Name of the S3 bucket holding the lock objects. */
  bucket: 'LAMBDA_SINGLETON_BUCKET',
  /** Key prefix under which lock objects live, e.g. `locks/`. */
  keyPrefix: 'LAMBDA_SINGLETON_KEY_PREFIX',
  /**
   * The function's lock key below the prefix, when no `key` option is given: the constructs set
   * it to the function's construct path (or their `lockKey` prop), which outlives the generated
   * function name.
   */
  key: 'LAMBDA_SINGLETON_KEY',
  /**
   * A CloudWatch namespace: when set (the constructs' `metrics` prop sets it), the lifecycle
   * writes its metrics as Embedded Metric Format lines, unless the `metrics` option is `false`.
   */
  metricsNamespace: 'LAMBDA_SINGLETON_METRICS_NAMESPACE',
  /** Name of the DynamoDB table holding the lock records (set instead of `bucket`). */
  table: 'LAMBDA_SINGLETON_TABLE',
  /**
   * Name of the lock table's partition key attribute (a string, whose value is the lock key).
   * Set only when it is not `pk`: absent means `pk`.
   */
  partitionKey: 'LAMBDA_SINGLETON_PARTITION_KEY',
  /**
   * Which store to use, `s3` or `dynamodb`, when the environment alone would be ambiguous. The
   * constructs also give it to esbuild as a `define`, which leaves the other store's SDK out of
   * the bundle.
   */
  store: 'LAMBDA_SINGLETON_STORE',
  /**
   * The oldest a tick may be when it is delivered, in ms after its scheduled time (the
   * `maxTickAgeMs` option, when the option is not given): the constructs' `maxTickAge` sets it.
   */
  maxTickAgeMs: 'LAMBDA_SINGLETON_MAX_TICK_AGE_MS',
} as const

/** The stores the environment can name. */
export type LockStoreKind = 's3' | 'dynamodb'

/** Default key prefix for lock objects. */
export const DEFAULT_KEY_PREFIX = 'locks/'

/**
 * What is wrong with a non-empty key prefix that the runtime and the constructs both refuse, or
 * undefined: one ending in a letter or digit runs into the lock's name (`locks` + `nightly` is
 * `locksnightly`, outside a grant on `locks/`), and one with a leading `/` names no S3 key the
 * constructs grant. Stores and constructs add their own rules (wildcards, length, emptiness).
 */
export function keyPrefixProblem(prefix: string, store: LockStoreKind | undefined): string | undefined {
  // `store` undefined: not known yet (a store given to the runtime may be either), no S3 rule.
  if (/[\p{L}\p{N}]$/u.test(prefix)) {
    return `ends in ${JSON.stringify(prefix.at(-1))}, so it runs into the lock's name (${JSON.stringify(`${prefix}nightly`)}); end it with a separator, e.g. ${JSON.stringify(`${prefix}/`)}`
  }
  if (store === 's3' && prefix.startsWith('/')) {
    return `starts with "/"; S3 keys have no leading slash (${JSON.stringify(prefix.replace(/^\/+/, ''))})`
  }
  return undefined
}

/**
 * The `source` of the payload that the construct's EventBridge Scheduler schedules send,
 * `{ source, schedule, scheduledTime }`, where `scheduledTime` is the tick's ISO time
 * (`<aws.scheduler.scheduled-time>`), used as the tick id for per-tick dedupe.
 */
export const SCHEDULER_EVENT_SOURCE = 'lambda-singleton.scheduler'

/**
 * The event each schedule sends to the function: `scheduledTime` is the tick's nominal time
 * (ISO 8601, the same for every delivery and retry of one tick), which the middleware uses as
 * the tick id for per-tick dedupe.
 */
export interface SingletonScheduleEvent {
  /** Always `lambda-singleton.scheduler`: tells this event from other invocations. */
  readonly source: 'lambda-singleton.scheduler'
  /** The `name` of the schedule that fired. */
  readonly schedule: string
  /** The tick's nominal time, e.g. `2026-11-21T03:00:00Z`: the tick id for per-tick dedupe. */
  readonly scheduledTime: string
}

/**
 * The metrics the lifecycle writes when metrics are on, named as they appear in CloudWatch (the
 * constructs' alarm and dashboard read them by these names).
 */
export const SingletonMetric = {
  /** A run took the lock (count). */
  Acquired: 'Acquired',
  /** A run found the lock held and did not run (count). */
  Held: 'Held',
  /** A delivery of a tick that had already completed (count). */
  Duplicate: 'Duplicate',
  /** A lease was lost while its run went on: runs may have overlapped (count). */
  Lost: 'Lost',
  /** A run was replaced by a run of a newer tick (`onHeld: 'replace'`) (count). */
  Replaced: 'Replaced',
  /** A release failed; the lock stays held until its lease expires (count). */
  ReleaseFailed: 'ReleaseFailed',
  /** A job is paused: it paused itself after failed runs, or an invocation skipped because it is (count). */
  Paused: 'Paused',
  /** How long acquiring took, waiting for a held lock included (milliseconds). */
  WaitMs: 'WaitMs',
  /** How long a run held the lock, from acquisition to release (milliseconds). */
  HeldMs: 'HeldMs',
  /**
   * A run completed: its handler returned and the lock was released with the tick recorded as
   * done (count). What the constructs' missed-run alarm counts.
   */
  Completed: 'Completed',
  /** A tick delivered later than `maxTickAgeMs` after its scheduled time, skipped (count). */
  Late: 'Late',
} as const
export type SingletonMetric = (typeof SingletonMetric)[keyof typeof SingletonMetric]

/**
 * The dimensions of every metric. Each is written twice: per lock key and function name, and
 * per function name alone (what the constructs' alarm and dashboard use, whatever keys the
 * function locks); where no function name is known, per lock key alone.
 */
export const MetricDimension = { LockKey: 'LockKey', FunctionName: 'FunctionName' } as const

/** The metrics' namespace when neither the option nor the environment names one. */
export const DEFAULT_METRICS_NAMESPACE = 'LambdaSingleton'

/** CloudWatch's rules for a namespace: 1-255 of these characters, and not AWS's own. */
const NAMESPACE_PATTERN = /^[A-Za-z0-9.\-_/#: ]{1,255}$/

/**
 * What keeps CloudWatch from taking `namespace` as a custom namespace (it drops the metrics of
 * any other), or undefined: one rule for the runtime's option and both constructs' props.
 */
export function namespaceProblem(namespace: unknown): string | undefined {
  return typeof namespace === 'string' && NAMESPACE_PATTERN.test(namespace) && !namespace.startsWith('AWS/')
    ? undefined
    : 'must be 1-255 letters, digits or . - _ / # : and spaces, not starting with AWS/'
}

/**
 * The longest duration any setting takes (a lease, exec's `--wait`, `--kill-after`): longer is a
 * mistake, not a duration, and stays far from the timers' limit and the `expires_at` arithmetic.
 */
export const MAX_DURATION_MS = 7 * 24 * 3_600_000

/** exec's `--kill-after` when none is given (and the task construct's `killAfter`). */
export const DEFAULT_KILL_AFTER_MS = 10_000

/**
 * What is wrong with a `pauseAfterFailures` (exec's `--pause-after-failures`, the constructs'
 * prop), or undefined. One rule for all three: the task construct passes its prop to exec, which
 * must not refuse at every run what the synth let through.
 */
export function pauseAfterFailuresProblem(count: unknown): string | undefined {
  return typeof count === 'number' && Number.isSafeInteger(count) && count >= 1
    ? undefined
    : 'must be a whole number of failed runs, 1 or more'
}

/**
 * What is wrong with a `maxTickAgeMs` (exec's `--max-tick-age`, the constructs' `maxTickAge`,
 * which reaches the runtime through `LOCK_ENV.maxTickAgeMs`), or undefined.
 */
export function maxTickAgeProblem(ms: unknown): string | undefined {
  return typeof ms === 'number' && Number.isFinite(ms) && ms > 0
    ? undefined
    : 'must be a finite number of ms above 0'
}
