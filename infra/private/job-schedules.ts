import { Duration, Stack } from 'aws-cdk-lib'
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch'
import * as iam from 'aws-cdk-lib/aws-iam'
import * as scheduler from 'aws-cdk-lib/aws-scheduler'
import * as sqs from 'aws-cdk-lib/aws-sqs'
import type { Construct } from 'constructs'
import type { ScheduledJobOptions } from '../scheduled-job.js'
import { type SingletonScheduleProps, validateRetryPolicy, validateSchedules } from '../schedules.js'
import { acknowledgeRule } from './nag.js'

/**
 * How Scheduler delivers every tick of a job, whatever the target: the shape of aws-cdk-lib's
 * `ScheduleTargetBaseProps`, so a target is made with `{ ...delivery, <its own props> }`.
 */
export interface ScheduleDelivery {
  /** The role Scheduler assumes: only this job's schedules may assume it. */
  readonly role: iam.Role
  readonly retryAttempts: number
  readonly maxEventAge: Duration
  /** Where ticks go that could not be delivered, if anywhere. */
  readonly deadLetterQueue: sqs.IQueue | undefined
}

/** What only the job knows: the target of one schedule (as aws-cdk-lib's targets keep their own specifics). */
export type TargetFactory = (
  delivery: ScheduleDelivery,
  schedule: SingletonScheduleProps,
) => scheduler.IScheduleTarget

/**
 * The scheduling every job shares, a function's or a task's: the schedules and the retry policy
 * validated, Scheduler's role (`ScheduleRole`), the dead-letter queue (`DeadLetterQueue`), and
 * one schedule (`Schedule-<name>`) per entry of `schedules`, each with the target `targetOf` makes.
 *
 * Not a construct: its resources are the owner's children, with the ids they had before it
 * existed. A construct level would change their logical ids, and CloudFormation would replace
 * deployed schedules, roles and queues.
 */
export class JobSchedules implements ScheduleDelivery {
  readonly role: iam.Role
  readonly retryAttempts: number
  readonly maxEventAge: Duration
  readonly deadLetterQueue: sqs.IQueue | undefined
  /** One schedule per entry of `schedules`, in the same order. */
  readonly schedules: readonly scheduler.Schedule[]

  constructor(
    owner: Construct,
    options: ScheduledJobOptions,
    roleDescription: string,
    targetOf: TargetFactory,
  ) {
    validateSchedules(owner, options.schedules)
    this.retryAttempts = options.retryAttempts ?? 3
    this.maxEventAge = options.maxEventAge ?? Duration.hours(1)
    validateRetryPolicy(owner, this.retryAttempts, this.maxEventAge)

    this.deadLetterQueue = deadLetterQueueFor(owner, options)
    this.role = schedulerRole(owner, roleDescription, options.scheduleGroup)
    // The settings alone, not `this`: a target spreads them into its props.
    const delivery: ScheduleDelivery = {
      role: this.role,
      retryAttempts: this.retryAttempts,
      maxEventAge: this.maxEventAge,
      deadLetterQueue: this.deadLetterQueue,
    }
    this.schedules = options.schedules.map(
      (schedule) =>
        new scheduler.Schedule(owner, `Schedule-${schedule.name}`, {
          schedule: schedule.expression,
          description: schedule.description,
          enabled: schedule.enabled ?? true,
          timeWindow: schedule.timeWindow,
          scheduleGroup: options.scheduleGroup,
          target: targetOf(delivery, schedule),
        }),
    )
  }
}

/**
 * The alarm (`DeadLetterAlarm`) on ticks waiting in a job's dead-letter queue: one is enough to
 * tell, whatever made the tick undeliverable.
 */
export function deadLetterAlarm(
  scope: Construct,
  queue: sqs.IQueue,
  period: Duration,
  description: string,
): cloudwatch.Alarm {
  return new cloudwatch.Alarm(scope, 'DeadLetterAlarm', {
    alarmDescription: description,
    metric: queue.metricApproximateNumberOfMessagesVisible({ period, statistic: cloudwatch.Stats.MAXIMUM }),
    threshold: 1,
    evaluationPeriods: 1,
    comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
  })
}

/**
 * Only schedules of this account and of `group` (the default group when none) may assume the
 * role: the confused-deputy guard.
 */
function schedulerRole(
  scope: Construct,
  description: string,
  group: scheduler.IScheduleGroup | undefined,
): iam.Role {
  return new iam.Role(scope, 'ScheduleRole', {
    description,
    assumedBy: new iam.ServicePrincipal('scheduler.amazonaws.com', {
      conditions: {
        StringEquals: {
          'aws:SourceAccount': Stack.of(scope).account,
          'aws:SourceArn':
            group?.scheduleGroupArn ??
            Stack.of(scope).formatArn({
              service: 'scheduler',
              resource: 'schedule-group',
              resourceName: 'default',
            }),
        },
      },
    }),
  })
}

/** The job's dead-letter queue: the one given, a new one when `deadLetterQueueEnabled`, or none. */
function deadLetterQueueFor(scope: Construct, options: ScheduledJobOptions): sqs.IQueue | undefined {
  if (options.deadLetterQueue) return options.deadLetterQueue
  if (!options.deadLetterQueueEnabled) return undefined
  const queue = new sqs.Queue(scope, 'DeadLetterQueue', {
    encryption: sqs.QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
    retentionPeriod: Duration.days(14),
  })
  acknowledgeRule(
    queue,
    'AwsSolutions-SQS3',
    'This queue is itself the dead-letter queue of the EventBridge Scheduler targets; ' +
      'cdk-nag only recognises SQS redrive policies and Lambda DLQs as such.',
  )
  return queue
}
