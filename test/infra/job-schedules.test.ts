import { Duration, type Stack } from 'aws-cdk-lib'
import { Template } from 'aws-cdk-lib/assertions'
import * as ecs from 'aws-cdk-lib/aws-ecs'
import type * as iam from 'aws-cdk-lib/aws-iam'
import { ScheduleExpression, ScheduleGroup } from 'aws-cdk-lib/aws-scheduler'
import type * as sqs from 'aws-cdk-lib/aws-sqs'
import { describe, expect, it } from 'vitest'
import {
  type ScheduledJobOptions,
  ScheduledSingletonFunction,
  ScheduledSingletonTask,
} from '../../infra/index.js'
import { FIXTURE_ENTRY, testStack } from './support.js'

type Resource = { Type: string; Properties: Record<string, unknown> }

/** What a job exposes of its scheduling, and the stack it is in. */
interface Scheduled {
  readonly stack: Stack
  readonly group: ScheduleGroup
  readonly role: iam.IRole
  readonly queue: sqs.IQueue
}

function options(stack: Stack): ScheduledJobOptions & { scheduleGroup: ScheduleGroup } {
  return {
    schedules: [
      { name: 'nightly', expression: ScheduleExpression.cron({ minute: '0', hour: '3' }) },
      { name: 'hourly', expression: ScheduleExpression.rate(Duration.hours(1)), enabled: false },
    ],
    scheduleGroup: new ScheduleGroup(stack, 'Group'),
    retryAttempts: 7,
    maxEventAge: Duration.hours(2),
    deadLetterQueueEnabled: true,
    alarms: {},
  }
}

function aFunction(): Scheduled {
  const stack = testStack()
  const props = options(stack)
  const { singleton } = new ScheduledSingletonFunction(stack, 'Job', { entry: FIXTURE_ENTRY, ...props })
  return { stack, group: props.scheduleGroup, role: singleton.scheduleRole, queue: queueOf(singleton) }
}

function aTask(): Scheduled {
  const stack = testStack()
  const props = options(stack)
  const task = new ScheduledSingletonTask(stack, 'Job', {
    image: ecs.ContainerImage.fromRegistry('public.ecr.aws/docker/library/node:24-slim'),
    command: ['node', 'job.js'],
    ...props,
  })
  return { stack, group: props.scheduleGroup, role: task.scheduleRole, queue: queueOf(task) }
}

function queueOf(job: { deadLetterQueue: sqs.IQueue | undefined }): sqs.IQueue {
  if (!job.deadLetterQueue) throw new Error('expected a dead-letter queue')
  return job.deadLetterQueue
}

/**
 * The scheduling part of a job's template, with its own role, queue and group written as
 * `<role>`, `<queue>`, `<group>`: what must read the same for a function and a task. The
 * targets' own fields (the function's input, the task's network) are left out.
 */
function schedulingOf({ stack, group, role, queue }: Scheduled) {
  const resources = Template.fromStack(stack).toJSON().Resources as Record<string, Resource>
  const roleId = stack.getLogicalId(role.node.defaultChild as never)
  const ofType = (type: string) => Object.values(resources).filter((r) => r.Type === type)
  const statements = ofType('AWS::IAM::Policy')
    .filter((p) => JSON.stringify(p.Properties.Roles) === JSON.stringify([{ Ref: roleId }]))
    .flatMap((p) => (p.Properties.PolicyDocument as { Statement: Array<{ Action: unknown }> }).Statement)
  const scheduling = {
    trust: resources[roleId]?.Properties.AssumeRolePolicyDocument,
    schedules: ofType('AWS::Scheduler::Schedule').map(({ Properties: { Target, ...schedule } }) => {
      const { RoleArn, RetryPolicy, DeadLetterConfig } = Target as Record<string, unknown>
      return { ...schedule, Target: { RoleArn, RetryPolicy, DeadLetterConfig } }
    }),
    sendToQueue: statements.filter((s) => s.Action === 'sqs:SendMessage'),
    // The descriptions differ on purpose: a function's tick is delivered, a task is started.
    deadLetterAlarms: ofType('AWS::CloudWatch::Alarm')
      .filter((a) => a.Properties.Namespace === 'AWS/SQS')
      .map(({ Properties: { AlarmDescription, ...alarm } }) => alarm),
  }
  let json = JSON.stringify(scheduling)
  for (const [token, name] of [
    [role.roleArn, '<role>'],
    [queue.queueArn, '<queue>'],
    [queue.queueName, '<queue name>'],
    [group.scheduleGroupArn, '<group arn>'],
    [group.scheduleGroupName, '<group>'],
  ] as const) {
    json = json.replaceAll(JSON.stringify(stack.resolve(token)), JSON.stringify(name))
  }
  return JSON.parse(json)
}

describe('a function and a task are scheduled alike', () => {
  const fn = schedulingOf(aFunction())
  const task = schedulingOf(aTask())

  it('the same schedules, role, retry policy, dead-letter queue and its alarm', () => {
    expect(task).toEqual(fn)
  })

  it.each([
    ['function', fn],
    ['task', task],
  ])('a %s’s role may be assumed only by Scheduler, for schedules of its account and group', (_, job) => {
    expect(job.trust.Statement).toEqual([
      {
        Action: 'sts:AssumeRole',
        Effect: 'Allow',
        Principal: { Service: 'scheduler.amazonaws.com' },
        Condition: { StringEquals: { 'aws:SourceAccount': '111111111111', 'aws:SourceArn': '<group arn>' } },
      },
    ])
  })

  it.each([
    ['function', fn],
    ['task', task],
  ])('a %s’s ticks are delivered as its props say, undeliverable ones to the queue it exposes', (_, job) => {
    expect(job.schedules).toHaveLength(2)
    for (const schedule of job.schedules) {
      expect(schedule.GroupName).toBe('<group>')
      expect(schedule.Target).toEqual({
        RoleArn: '<role>',
        RetryPolicy: { MaximumRetryAttempts: 7, MaximumEventAgeInSeconds: 7200 },
        DeadLetterConfig: { Arn: '<queue>' },
      })
    }
    expect(job.schedules.map((s: { State: string }) => s.State)).toEqual(['ENABLED', 'DISABLED'])
    expect(job.sendToQueue).toEqual([{ Action: 'sqs:SendMessage', Effect: 'Allow', Resource: '<queue>' }])
    expect(job.deadLetterAlarms).toHaveLength(1)
    expect(job.deadLetterAlarms[0].Dimensions).toEqual([{ Name: 'QueueName', Value: '<queue name>' }])
  })
})
