import type { Duration } from 'aws-cdk-lib'
import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch'
import type * as iam from 'aws-cdk-lib/aws-iam'
import type * as lambda from 'aws-cdk-lib/aws-lambda'
import * as scheduler from 'aws-cdk-lib/aws-scheduler'
import * as targets from 'aws-cdk-lib/aws-scheduler-targets'
import type * as sqs from 'aws-cdk-lib/aws-sqs'
import { Construct } from 'constructs'
import { LOCK_ENV, maxTickAgeProblem, SCHEDULER_EVENT_SOURCE } from '../lib/config.js'
import { SingletonValidationError } from './errors.js'
import type { LockBucket } from './lock-bucket.js'
import type { ILockStore } from './lock-store.js'
import type { LockTable } from './lock-table.js'
import { JobSchedules } from './private/job-schedules.js'
import { chooseLockStore } from './private/lock-store-choice.js'
import { acknowledgeWildcardResource } from './private/nag.js'
import type { ScheduledJobOptions } from './scheduled-job.js'
import { createAlarms, createMetricAlarms, validateMetricAlarms } from './singleton-alarms.js'
import { SingletonMetrics, type SingletonMetricsProps } from './singleton-metrics.js'

/** Everything about scheduling a singleton function except the function itself. */
export interface ScheduledSingletonOptions extends ScheduledJobOptions {
  /**
   * Skip a tick delivered longer than this after its scheduled time (a `late` skip, without
   * asking the lock store): Lambda retries a failed asynchronous run, and delivers throttled
   * events, for up to 6 hours, and Scheduler retries delivery for up to `maxEventAge`. Given to
   * the function as `LAMBDA_SINGLETON_MAX_TICK_AGE_MS` (the middleware's `maxTickAgeMs`).
   *
   * @default no limit: a tick runs however late it comes
   */
  readonly maxTickAge?: Duration

  /**
   * The lock keys the function's role may use, below the store's key prefix, when its handler
   * chooses the key at run time (the middleware's `key` as a function: per tenant, per entity).
   * Patterns take IAM's wildcards (`*` any run of characters, `?` one), e.g. `['tenant-sync/*']`.
   * What is listed is all the role may write: add `lockKey` if the handler also locks it (the
   * role may always read it: the runtime reads the store's clock from it at INIT). `['*']`
   * grants the whole prefix, every job's lock: one job's role could then write, and park, another
   * job's lock.
   *
   * @default only the function's own lock key (`lockKey`): its role can read and write that one
   *   lock, and no other job's
   */
  readonly lockKeys?: readonly string[]

  /**
   * CloudWatch metrics from the middleware (Embedded Metric Format lines in the function's
   * logs): acquired, skipped, duplicate, lost, release failed, wait and hold times. With
   * `alarms`, an alarm on lost leases too; optionally a dashboard.
   *
   * @default no metrics
   */
  readonly metrics?: SingletonMetricsProps
}

/** Props of `ScheduledSingleton`: the wiring for a function that already exists. */
export interface ScheduledSingletonProps extends ScheduledSingletonOptions {
  /**
   * The function to wire. Its handler must be wrapped by the `singleton()` middleware; it gets
   * the lock environment variables, the lock grant, and the schedules.
   */
  readonly function: lambda.Function
}

/**
 * Makes an existing Lambda function a scheduled singleton: lock environment variables and a
 * least-privilege grant on a `LockBucket` (or a `LockTable`), on the function's own lock key
 * only; EventBridge Scheduler schedules whose event carries the tick's scheduled time, a retry
 * policy and optional dead-letter queue, optional alarms.
 */
export class ScheduledSingleton extends Construct {
  /** The function being scheduled. */
  readonly function: lambda.Function
  /** Where its lock lives: `lockBucket` or `lockTable`, whichever is in use. */
  readonly lockStore: ILockStore
  /** The bucket its lock lives in (given or created), or `undefined` when it uses `lockTable`. */
  readonly lockBucket: LockBucket | undefined
  /** The table its lock lives in, when `lockTable` was given. */
  readonly lockTable: LockTable | undefined
  /** One schedule per entry of `schedules`, in the same order. */
  readonly schedules: readonly scheduler.Schedule[]
  /** The role Scheduler assumes to invoke the function (and to send to the dead-letter queue). */
  readonly scheduleRole: iam.Role
  /** The queue for undeliverable ticks, if any. */
  readonly deadLetterQueue: sqs.IQueue | undefined
  /** Alarm on failed invocations, when `alarms` is set. */
  readonly errorsAlarm: cloudwatch.Alarm | undefined
  /** Alarm on ticks waiting in the dead-letter queue, when `alarms` is set and there is a queue. */
  readonly deadLetterAlarm: cloudwatch.Alarm | undefined
  /** The function's lock key below the store's key prefix (`lockKey`, or the construct path). */
  readonly lockKey: string
  /** The lifecycle's metrics, their lost-lease alarm and dashboard, when `metrics` is set. */
  readonly metrics: SingletonMetrics | undefined
  /** Alarm when no run completed within `alarms.missedRuns` schedule intervals, when made. */
  readonly missedRunAlarm: cloudwatch.Alarm | undefined
  /** Alarm when a run held the lock longer than `alarms.maxRunTime`, when made. */
  readonly runTooLongAlarm: cloudwatch.Alarm | undefined
  /** Alarm while the job is paused, when made. */
  readonly pausedAlarm: cloudwatch.Alarm | undefined

  constructor(scope: Construct, id: string, props: ScheduledSingletonProps) {
    super(scope, id)
    this.function = props.function
    // First: it checks the schedules and the retry policy before anything else is made.
    const jobSchedules = new JobSchedules(
      this,
      props,
      'Lets EventBridge Scheduler invoke a singleton function',
      (delivery, schedule) =>
        new targets.LambdaInvoke(this.function, {
          ...delivery,
          // The middleware reads exactly this shape (lib/lifecycle/tick.ts).
          input: scheduler.ScheduleTargetInput.fromObject({
            source: SCHEDULER_EVENT_SOURCE,
            schedule: schedule.name,
            scheduledTime: scheduler.ContextAttribute.scheduledTime,
          }),
        }),
    )
    this.deadLetterQueue = jobSchedules.deadLetterQueue
    this.scheduleRole = jobSchedules.role
    this.schedules = jobSchedules.schedules
    acknowledgeWildcardResource(
      this.scheduleRole,
      `${this.function.functionArn}:*`,
      'CDK grantInvoke also allows the versions and aliases of the one function Scheduler invokes.',
    )

    const chosen = chooseLockStore(this, props)
    this.lockStore = chosen.store
    this.lockBucket = chosen.bucket
    this.lockTable = chosen.table
    this.lockKey = this.lockStore.bind(this.function, { lockKey: props.lockKey, lockKeys: props.lockKeys })
    if (props.maxTickAge) {
      // The runtime's rule, which reads it from the environment at every invocation.
      const problem = props.maxTickAge.isUnresolved()
        ? undefined
        : maxTickAgeProblem(props.maxTickAge.toMilliseconds())
      if (problem) throw new SingletonValidationError(`maxTickAge ${problem}, got ${props.maxTickAge}`, this)
      this.function.addEnvironment(LOCK_ENV.maxTickAgeMs, String(props.maxTickAge.toMilliseconds()))
    }
    if (props.alarms) validateMetricAlarms(this, props.alarms, props.metrics !== undefined)

    const alarms = props.alarms && createAlarms(this, props.alarms, this.function, this.deadLetterQueue)
    this.errorsAlarm = alarms?.errors
    this.deadLetterAlarm = alarms?.deadLetter
    this.metrics =
      props.metrics &&
      new SingletonMetrics(this, 'Metrics', {
        ...props.metrics,
        function: this.function,
        ...(alarms &&
          props.alarms?.lost !== false && {
            alarm: { actions: props.alarms?.actions ?? [], period: alarms.period },
          }),
      })
    const metricAlarms =
      props.alarms &&
      createMetricAlarms(this, props.alarms, {
        metrics: this.metrics,
        schedules: props.schedules,
        timeout: this.function.timeout,
      })
    this.missedRunAlarm = metricAlarms?.missedRun
    this.runTooLongAlarm = metricAlarms?.runTooLong
    this.pausedAlarm = metricAlarms?.paused
  }
}
