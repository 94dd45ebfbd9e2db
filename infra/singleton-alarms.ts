import { Annotations, Duration } from 'aws-cdk-lib'
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch'
import type * as lambda from 'aws-cdk-lib/aws-lambda'
import type * as sqs from 'aws-cdk-lib/aws-sqs'
import type { Construct } from 'constructs'
import { SingletonMetric } from '../lib/config.js'
import { SingletonValidationError } from './errors.js'
import { deadLetterAlarm } from './private/job-schedules.js'
import { longestGap } from './private/schedule-gap.js'
import type { SingletonScheduleProps } from './schedules.js'

/** CloudWatch alarms on a singleton function and its schedules. */
export interface SingletonAlarmProps {
  /**
   * What the alarms do when they fire and when they recover, e.g. an `SnsAction`.
   *
   * @default no actions: the alarms only show in CloudWatch
   */
  readonly actions?: readonly cloudwatch.IAlarmAction[]

  /**
   * Failed invocations within one `period` that raise the errors alarm.
   *
   * @default 1
   */
  readonly errorThreshold?: number

  /**
   * The period the alarms evaluate (all but the missed-run and paused alarms, whose period
   * follows the schedules).
   *
   * @default Duration.minutes(5)
   */
  readonly period?: Duration

  /**
   * Alarm when no run completed (the `Completed` metric) within this many schedule intervals: the
   * job silently stopped running, is skipped every tick (a stuck lock, late or paused ticks), or
   * its schedules stopped firing. The interval is the longest gap between two ticks of the enabled
   * schedules (`scheduleInterval` overrides it); the alarm's period is that interval (at most a
   * day), and it fires once `missedRuns` intervals and one more period passed without a completed
   * run. Missing data is breaching. Needs `metrics`. `false`: no alarm.
   *
   * @default 2, when `metrics` is set and the interval can be told; otherwise no alarm
   */
  readonly missedRuns?: number | false

  /**
   * The schedule interval the missed-run alarm counts in, for schedules whose interval the
   * construct cannot tell (a cron with `L`, `W` or `#`), or to count in another one.
   *
   * @default the longest gap between two ticks of the enabled schedules
   */
  readonly scheduleInterval?: Duration

  /**
   * Alarm when a run held the lock longer than this (the `HeldMs` maximum in one `period`): a job
   * getting close to its timeout, or outgrowing its schedule. A run killed at its timeout writes no
   * `HeldMs`: the errors alarm reports it. Needs `metrics`. `false`: no alarm.
   *
   * @default 80% of the function's timeout, when `metrics` is set
   */
  readonly maxRunTime?: Duration | false

  /**
   * Alarm on a lost lease (`Lost` > 0 in one `period`): two runs may have overlapped. Needs `metrics`.
   *
   * @default true, when `metrics` is set
   */
  readonly lost?: boolean

  /**
   * Alarm while the job is paused (`Paused` > 0 in either of the last two schedule intervals):
   * every tick is skipped until someone resumes it. Needs `metrics`.
   *
   * @default true, when `metrics` is set
   */
  readonly paused?: boolean
}

/** The alarms `createAlarms` made, and the period they evaluate. */
export interface SingletonAlarms {
  readonly errors: cloudwatch.Alarm
  readonly deadLetter: cloudwatch.Alarm | undefined
  readonly period: Duration
}

/**
 * Alarms in `scope` on the function's failed invocations and, when there is a dead-letter queue,
 * on ticks waiting in it; each with `props.actions` on alarm and on recovery.
 */
export function createAlarms(
  scope: Construct,
  props: SingletonAlarmProps,
  fn: lambda.IFunction,
  deadLetterQueue: sqs.IQueue | undefined,
): SingletonAlarms {
  const period = props.period ?? Duration.minutes(5)
  const errorThreshold = props.errorThreshold ?? 1
  if (!Number.isInteger(errorThreshold) || errorThreshold < 1) {
    throw new SingletonValidationError(
      `alarms.errorThreshold must be a whole number >= 1, got ${errorThreshold}`,
      scope,
    )
  }
  const errors = new cloudwatch.Alarm(scope, 'ErrorsAlarm', {
    alarmDescription: 'A singleton run failed (it will be retried by Lambda, then by the next tick)',
    metric: fn.metricErrors({ period, statistic: cloudwatch.Stats.SUM }),
    threshold: errorThreshold,
    evaluationPeriods: 1,
    comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
  })
  const deadLetter =
    deadLetterQueue &&
    deadLetterAlarm(
      scope,
      deadLetterQueue,
      period,
      'EventBridge Scheduler could not deliver a tick: it is in the dead-letter queue',
    )
  for (const alarm of [errors, deadLetter]) {
    if (!alarm) continue
    alarm.addAlarmAction(...(props.actions ?? []))
    alarm.addOkAction(...(props.actions ?? []))
  }
  return { errors, deadLetter, period }
}

/** The alarms on the lifecycle's metrics that `createMetricAlarms` made (the lost-lease one is `SingletonMetrics.lostAlarm`). */
export interface SingletonMetricAlarms {
  /** No run completed within `missedRuns` schedule intervals. */
  readonly missedRun: cloudwatch.Alarm | undefined
  /** A run held the lock longer than `maxRunTime`. */
  readonly runTooLong: cloudwatch.Alarm | undefined
  /** Ticks were skipped because the job is paused. */
  readonly paused: cloudwatch.Alarm | undefined
}

/** What the metric alarms are made from, besides their props. */
/**
 * Where the alarms read the lifecycle's metrics: its EMF metrics for a function
 * (`SingletonMetrics`), metric filters on `exec`'s log lines for a task.
 */
export interface SingletonMetricSource {
  metric(name: SingletonMetric, props?: cloudwatch.MetricOptions): cloudwatch.IMetric
}

export interface SingletonMetricAlarmsWiring {
  /** The job's metrics; `undefined` when `metrics` is off (then no such alarm can fire). */
  readonly metrics: SingletonMetricSource | undefined
  /** The schedules that invoke the function. */
  readonly schedules: readonly SingletonScheduleProps[]
  /** The function's timeout, for the default `maxRunTime`. */
  readonly timeout: Duration | undefined
}

const SECOND = 1_000
const HOUR = 3_600 * SECOND
const DAY = 24 * HOUR
/** CloudWatch's limits: a period of at most a day (here), N periods at most 7 days (1 day when a period is under an hour). */
const MAX_PERIOD = DAY
const MAX_SPAN = 7 * DAY
const MAX_SPAN_SHORT_PERIOD = DAY

/** The props that ask for an alarm on the lifecycle's metrics, when given explicitly. */
const METRIC_ALARMS = ['missedRuns', 'maxRunTime', 'lost', 'paused'] as const

/** Refuses an alarm on the lifecycle's metrics that was asked for while metrics are off: it could never fire. */
export function validateMetricAlarms(scope: Construct, props: SingletonAlarmProps, metricsOn: boolean): void {
  if (metricsOn) return
  for (const name of METRIC_ALARMS) {
    const value = props[name]
    if (value !== undefined && value !== false) {
      throw new SingletonValidationError(
        `alarms.${name} needs \`metrics\`: the alarm reads the CloudWatch metrics the middleware ` +
          'writes, which are off without it (add `metrics: {}`, or leave the alarm out)',
        scope,
      )
    }
  }
}

/**
 * Alarms in `scope` on the lifecycle's metrics: a missed run (no completed run within
 * `missedRuns` schedule intervals), a run that held the lock too long, and a paused job; each
 * with `props.actions` on alarm and on recovery. None without metrics.
 */
export function createMetricAlarms(
  scope: Construct,
  props: SingletonAlarmProps,
  wiring: SingletonMetricAlarmsWiring,
): SingletonMetricAlarms {
  const { metrics } = wiring
  validateMetricAlarms(scope, props, metrics !== undefined)
  if (!metrics) return { missedRun: undefined, runTooLong: undefined, paused: undefined }
  const period = props.period ?? Duration.minutes(5)
  const cadence = scheduleCadence(scope, props, wiring.schedules)
  const missedRun = cadence && missedRunAlarm(scope, metrics, cadence)
  const runTooLong = runTooLongAlarm(scope, props, metrics, wiring.timeout, period)
  const paused =
    props.paused === false
      ? undefined
      : new cloudwatch.Alarm(scope, 'PausedAlarm', {
          alarmDescription: 'The singleton job is paused: every tick is skipped until someone resumes it.',
          metric: metrics.metric(SingletonMetric.Paused, {
            period: cadence?.period ?? period,
            statistic: cloudwatch.Stats.SUM,
          }),
          threshold: 0,
          // Any paused tick in the last two periods: the alarm stays on between ticks.
          evaluationPeriods: 2,
          datapointsToAlarm: 1,
          comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
          treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        })
  for (const alarm of [missedRun, runTooLong, paused]) {
    if (!alarm) continue
    alarm.addAlarmAction(...(props.actions ?? []))
    alarm.addOkAction(...(props.actions ?? []))
  }
  return { missedRun, runTooLong, paused }
}

/** The missed-run alarm's period and how many of them it watches. */
interface Cadence {
  /** The schedule interval, in ms. */
  readonly intervalMs: number
  readonly period: Duration
  readonly evaluationPeriods: number
  readonly missedRuns: number
}

/**
 * The schedule interval (the longest gap between ticks of the enabled schedules, or
 * `scheduleInterval`) and the alarm period and evaluation periods that watch `missedRuns` of them
 * within CloudWatch's limits; `undefined` (with a warning, or an error when `missedRuns` was given)
 * when that cannot be done.
 */
function scheduleCadence(
  scope: Construct,
  props: SingletonAlarmProps,
  schedules: readonly SingletonScheduleProps[],
): Cadence | undefined {
  if (props.missedRuns === false) return undefined
  const explicit = props.missedRuns !== undefined
  const missedRuns = props.missedRuns ?? 2
  if (!Number.isInteger(missedRuns) || missedRuns < 1) {
    throw new SingletonValidationError(
      `alarms.missedRuns must be a whole number >= 1, got ${missedRuns}`,
      scope,
    )
  }
  const cannot = (why: string): undefined => {
    const message = `no missed-run alarm: ${why}`
    if (explicit) throw new SingletonValidationError(`alarms.missedRuns: ${why}`, scope)
    Annotations.of(scope).addWarningV2('lambda-singleton:missedRunAlarm', message)
    return undefined
  }
  let intervalMs: number | undefined
  if (props.scheduleInterval) {
    intervalMs = props.scheduleInterval.toMilliseconds()
    if (intervalMs < 60 * SECOND) {
      throw new SingletonValidationError('alarms.scheduleInterval must be at least 1 minute', scope)
    }
  } else {
    const gaps = schedules
      .filter((schedule) => schedule.enabled !== false)
      .map((schedule) => ({ schedule, gap: longestGap(schedule.expression, schedule.timeWindow) }))
    const recurring = gaps.flatMap(({ gap }) => (gap.kind === 'recurring' ? [gap.longestMs] : []))
    // Ticks of all the schedules count: the one that fires most reliably bounds the gap.
    if (recurring.length > 0) intervalMs = Math.min(...recurring)
    else {
      const unknown = gaps.find(({ gap }) => gap.kind === 'unknown')
      if (!unknown) {
        // Only one-time or disabled schedules: there is no run to miss (unless asked for).
        return explicit ? cannot('no enabled schedule fires more than once') : undefined
      }
      const why = unknown.gap.kind === 'unknown' ? unknown.gap.why : ''
      return cannot(
        `the interval of schedule ${JSON.stringify(unknown.schedule.name)} cannot be told (${why}); give alarms.scheduleInterval`,
      )
    }
  }
  const periodMs = Math.ceil(Math.min(intervalMs, MAX_PERIOD) / (60 * SECOND)) * 60 * SECOND
  // One period more than the intervals: a run's own time, and a period in progress, never alarm.
  const evaluationPeriods = Math.ceil((missedRuns * intervalMs) / periodMs) + 1
  const span = periodMs * evaluationPeriods
  const limit = periodMs < HOUR ? MAX_SPAN_SHORT_PERIOD : MAX_SPAN
  if (span > limit) {
    return cannot(
      `${missedRuns} intervals of ${Duration.millis(intervalMs).toHumanString()} and one more period ` +
        `(${Duration.millis(span).toHumanString()}) are longer than a CloudWatch alarm can watch ` +
        `(${Duration.millis(limit).toHumanString()} with ${periodMs < HOUR ? 'periods under an hour' : 'these periods'}); ` +
        'lower alarms.missedRuns, or set it to false',
    )
  }
  return { intervalMs, period: Duration.millis(periodMs), evaluationPeriods, missedRuns }
}

function missedRunAlarm(
  scope: Construct,
  metrics: SingletonMetricSource,
  cadence: Cadence,
): cloudwatch.Alarm {
  return new cloudwatch.Alarm(scope, 'MissedRunAlarm', {
    alarmDescription:
      `No singleton run completed within ${cadence.missedRuns} schedule intervals ` +
      `(${Duration.millis(cadence.intervalMs).toHumanString()} each): the job stopped running, is ` +
      'skipped every tick (held, late or paused), or its schedules stopped firing.',
    metric: metrics.metric(SingletonMetric.Completed, {
      period: cadence.period,
      statistic: cloudwatch.Stats.SUM,
    }),
    threshold: 1,
    evaluationPeriods: cadence.evaluationPeriods,
    datapointsToAlarm: cadence.evaluationPeriods,
    comparisonOperator: cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
    // No data is no completed run: that is what this alarm is for.
    treatMissingData: cloudwatch.TreatMissingData.BREACHING,
  })
}

function runTooLongAlarm(
  scope: Construct,
  props: SingletonAlarmProps,
  metrics: SingletonMetricSource,
  timeout: Duration | undefined,
  period: Duration,
): cloudwatch.Alarm | undefined {
  if (props.maxRunTime === false) return undefined
  let limit = props.maxRunTime
  if (limit === undefined) {
    // Lambda's own default timeout is 3 s.
    const known = timeout ?? Duration.seconds(3)
    if (known.isUnresolved()) return undefined
    limit = Duration.millis(Math.floor(known.toMilliseconds() * 0.8))
  } else if (limit.toMilliseconds() <= 0) {
    throw new SingletonValidationError('alarms.maxRunTime must be above 0', scope)
  }
  return new cloudwatch.Alarm(scope, 'RunTooLongAlarm', {
    alarmDescription:
      `A singleton run held the lock longer than ${limit.toHumanString()}: it is getting close to ` +
      'its timeout, or outgrowing its schedule (the next ticks skip while it holds the lock).',
    metric: metrics.metric(SingletonMetric.HeldMs, { period, statistic: cloudwatch.Stats.MAXIMUM }),
    threshold: limit.toMilliseconds(),
    evaluationPeriods: 1,
    comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
  })
}
