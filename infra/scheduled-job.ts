import type { Duration } from 'aws-cdk-lib'
import type * as scheduler from 'aws-cdk-lib/aws-scheduler'
import type * as sqs from 'aws-cdk-lib/aws-sqs'
import type { LockBucket } from './lock-bucket.js'
import type { LockTable } from './lock-table.js'
import type { SingletonScheduleProps } from './schedules.js'
import type { SingletonAlarmProps } from './singleton-alarms.js'

/**
 * What every scheduled singleton takes, whatever runs it (a Lambda function, a Fargate task):
 * where its lock lives and under which key, the schedules and how Scheduler delivers their ticks,
 * and the alarms. `ScheduledSingletonOptions` and `ScheduledSingletonTaskProps` extend it.
 */
export interface ScheduledJobOptions {
  /**
   * Where the job's lock lives, in S3. Share one `LockBucket` between jobs (and stacks) to keep
   * all locks in one bucket. Mutually exclusive with `lockTable`.
   *
   * @default a new `LockBucket` with default props, inside this construct, unless `lockTable`
   *   is given
   */
  readonly lockBucket?: LockBucket

  /**
   * Where the job's lock lives, in DynamoDB, instead of `lockBucket`. Share one `LockTable`
   * between jobs to keep all locks in one table.
   *
   * @default no table: the lock lives in `lockBucket`
   */
  readonly lockTable?: LockTable

  /**
   * The job's lock key, below the lock store's key prefix. Jobs (functions and tasks, in any
   * stack or region) that share a lock store and a lock key share one lock. Changing it starts a
   * new lock: pin it before you move or rename the construct.
   *
   * @default the construct path, e.g. `Jobs/NightlyReport`
   */
  readonly lockKey?: string

  /** The EventBridge Scheduler schedules that start the job: at least one. */
  readonly schedules: readonly SingletonScheduleProps[]

  /**
   * The schedule group the schedules belong to.
   *
   * @default the account's `default` group
   */
  readonly scheduleGroup?: scheduler.IScheduleGroup

  /**
   * How many times Scheduler retries starting the job for one tick when the start fails
   * (throttling, service errors), 0–185. This is Scheduler's retry, not a retry of a failed run.
   *
   * @default 3
   */
  readonly retryAttempts?: number

  /**
   * How long Scheduler keeps trying to start one tick, 1 minute to 24 hours. A tick older than
   * this goes to the dead-letter queue (if any) instead of running late.
   *
   * @default Duration.hours(1)
   */
  readonly maxEventAge?: Duration

  /**
   * A queue for ticks that Scheduler could not start within `retryAttempts`/`maxEventAge`.
   *
   * @default a new encrypted, TLS-only queue when `deadLetterQueueEnabled`, otherwise none
   */
  readonly deadLetterQueue?: sqs.IQueue

  /**
   * Create a dead-letter queue for ticks that could not be started (ignored when
   * `deadLetterQueue` is given).
   *
   * @default false
   */
  readonly deadLetterQueueEnabled?: boolean

  /**
   * Alarms: on failed runs, on ticks in the dead-letter queue, and on missed runs, runs that held
   * the lock too long, lost leases and a paused job, read from the job's metrics.
   *
   * @default no alarms
   */
  readonly alarms?: SingletonAlarmProps
}
