import {
  DEFAULT_METRICS_NAMESPACE,
  LOCK_ENV,
  MetricDimension,
  namespaceProblem,
  SingletonMetric,
} from '../config.js'
import { LockOptionsError } from '../core/errors.js'
import { Outcome, type OutcomeEvent } from './outcome.js'

/** Metrics as CloudWatch Embedded Metric Format lines (the `metrics` option). */
export interface SingletonMetricsOptions {
  /**
   * The CloudWatch namespace.
   * @default process.env.LAMBDA_SINGLETON_METRICS_NAMESPACE (set by the constructs' `metrics`),
   *   else process.env.POWERTOOLS_METRICS_NAMESPACE, else 'LambdaSingleton'
   */
  readonly namespace?: string
  /**
   * Where each EMF line goes. @default standard output, one JSON line per outcome, which Lambda
   * sends to CloudWatch Logs and CloudWatch turns into metrics
   */
  readonly write?: (line: string) => void
}

const COUNTS: Partial<Record<OutcomeEvent['outcome'], SingletonMetric>> = {
  [Outcome.Acquired]: SingletonMetric.Acquired,
  [Outcome.Held]: SingletonMetric.Held,
  [Outcome.Duplicate]: SingletonMetric.Duplicate,
  [Outcome.Late]: SingletonMetric.Late,
  [Outcome.Lost]: SingletonMetric.Lost,
  [Outcome.Replaced]: SingletonMetric.Replaced,
  [Outcome.ReleaseFailed]: SingletonMetric.ReleaseFailed,
  [Outcome.Paused]: SingletonMetric.Paused,
}

/** Refuses a `metrics` option that can never work (`LockOptionsError`), when the adapter is made. */
export function validateMetrics(metrics: unknown, where: string): void {
  const fail = (message: string): never => {
    throw new LockOptionsError(`${where}: ${message}`)
  }
  if (metrics === undefined || typeof metrics === 'boolean') return
  if (typeof metrics !== 'object' || metrics === null)
    fail('metrics must be a boolean or { namespace?, write? }')
  const { namespace, write } = metrics as SingletonMetricsOptions
  const problem = namespace === undefined ? undefined : namespaceProblem(namespace)
  if (problem) fail(`metrics.namespace ${problem}; got ${JSON.stringify(namespace)}`)
  if (write !== undefined && typeof write !== 'function') fail('metrics.write must be a function')
}

/**
 * Writes one EMF line per outcome event that has a metric, with the lock key and the function
 * name as dimensions: the same shape as Powertools Metrics, so both can share a namespace. Off
 * unless `metrics` is given, or the environment names a namespace and `metrics` is not `false`.
 */
export class EmfMetrics {
  readonly #options: boolean | SingletonMetricsOptions | undefined
  readonly #now: () => number

  constructor(options: boolean | SingletonMetricsOptions | undefined, now: () => number) {
    this.#options = options
    this.#now = now
  }

  /** Records `event` for the function `functionName` (when known), if metrics are on. */
  record(event: OutcomeEvent, functionName: string | undefined): void {
    const namespace = this.#namespace()
    if (namespace === undefined) return
    const values = metricValues(event)
    if (values.length === 0) return
    const line = emfLine(namespace, this.#now(), { key: event.key, functionName }, values)
    const write = typeof this.#options === 'object' ? this.#options.write : undefined
    if (write) write(line)
    else process.stdout.write(`${line}\n`)
  }

  #namespace(): string | undefined {
    const options = this.#options
    const fromEnv = process.env[LOCK_ENV.metricsNamespace] || undefined
    if (options === false || (options === undefined && fromEnv === undefined)) return undefined
    const given = typeof options === 'object' ? options.namespace : undefined
    return given ?? fromEnv ?? (process.env.POWERTOOLS_METRICS_NAMESPACE || DEFAULT_METRICS_NAMESPACE)
  }
}

type MetricValue = readonly [SingletonMetric, number]

function metricValues(event: OutcomeEvent): MetricValue[] {
  const values: MetricValue[] = []
  const count = COUNTS[event.outcome]
  if (count) values.push([count, 1])
  if (event.outcome === Outcome.Released && event.completed) values.push([SingletonMetric.Completed, 1])
  if (event.waitMs !== undefined) values.push([SingletonMetric.WaitMs, event.waitMs])
  if (event.heldMs !== undefined) values.push([SingletonMetric.HeldMs, event.heldMs])
  return values
}

/**
 * One Embedded Metric Format document: the metrics under `_aws`, their values and dimensions as
 * top-level fields. Two dimension sets: per lock key and function, and per function (what the
 * constructs' alarm and dashboard use, whatever keys the function locks).
 */
export function emfLine(
  namespace: string,
  timestamp: number,
  where: { readonly key: string; readonly functionName: string | undefined },
  values: readonly MetricValue[],
): string {
  const { LockKey, FunctionName } = MetricDimension
  const dimensions = where.functionName ? [[LockKey, FunctionName], [FunctionName]] : [[LockKey]]
  const metrics = values.map(([name]) => ({
    Name: name,
    Unit: name === SingletonMetric.WaitMs || name === SingletonMetric.HeldMs ? 'Milliseconds' : 'Count',
  }))
  return JSON.stringify({
    _aws: {
      Timestamp: Math.round(timestamp),
      CloudWatchMetrics: [{ Namespace: namespace, Dimensions: dimensions, Metrics: metrics }],
    },
    [LockKey]: where.key,
    ...(where.functionName && { [FunctionName]: where.functionName }),
    ...Object.fromEntries(values),
  })
}
