import { Duration, Stack } from 'aws-cdk-lib'
import * as iam from 'aws-cdk-lib/aws-iam'
import * as scheduler from 'aws-cdk-lib/aws-scheduler'
import * as sqs from 'aws-cdk-lib/aws-sqs'
import type { Construct } from 'constructs'
import type { ScheduledJobOptions } from '../scheduled-job.js'
import type { SingletonScheduleProps } from '../schedules.js'
import { acknowledgeRule } from './nag.js'

/**
 * The role EventBridge Scheduler assumes to start a construct's job (`ScheduleRole`). Only
 * schedules of this account and of `group` (the default group when none) may assume it: the
 * confused-deputy guard.
 */
export function schedulerRole(
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

/** One schedule (`Schedule-<name>`) per entry of `schedules`, in order, each with the target `targetOf` gives it. */
export function createSchedules(
  scope: Construct,
  schedules: readonly SingletonScheduleProps[],
  group: scheduler.IScheduleGroup | undefined,
  targetOf: (schedule: SingletonScheduleProps) => scheduler.IScheduleTarget,
): scheduler.Schedule[] {
  return schedules.map(
    (schedule) =>
      new scheduler.Schedule(scope, `Schedule-${schedule.name}`, {
        schedule: schedule.expression,
        description: schedule.description,
        enabled: schedule.enabled ?? true,
        timeWindow: schedule.timeWindow,
        scheduleGroup: group,
        target: targetOf(schedule),
      }),
  )
}

/** The job's dead-letter queue: the one given, a new one when `deadLetterQueueEnabled`, or none. */
export function deadLetterQueueFor(scope: Construct, options: ScheduledJobOptions): sqs.IQueue | undefined {
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
