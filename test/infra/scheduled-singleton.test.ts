import { Duration, Errors, type Stack, TimeZone } from 'aws-cdk-lib'
import { Match, Template } from 'aws-cdk-lib/assertions'
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions'
import * as lambda from 'aws-cdk-lib/aws-lambda'
import * as s3 from 'aws-cdk-lib/aws-s3'
import { ScheduleExpression, ScheduleGroup } from 'aws-cdk-lib/aws-scheduler'
import * as sns from 'aws-cdk-lib/aws-sns'
import * as sqs from 'aws-cdk-lib/aws-sqs'
import { describe, expect, it } from 'vitest'
import {
  LockBucket,
  ScheduledSingleton,
  ScheduledSingletonFunction,
  type ScheduledSingletonFunctionProps,
  SingletonValidationError,
} from '../../infra/index.js'
import { DEFAULT_KEY_PREFIX, LOCK_ENV, SCHEDULER_EVENT_SOURCE } from '../../lib/config.js'
import {
  FIXTURE_ENTRY,
  nagAcknowledgements,
  nagFindings,
  rawNagFindings,
  testStack,
  thrown,
} from './support.js'

type Resources = Record<string, { Properties: Record<string, unknown> }>

const ref = (stack: Stack, construct: { node: { defaultChild?: unknown } }) =>
  stack.getLogicalId(construct.node.defaultChild as never)

/** A fully featured function: two schedules, a created DLQ, alarms, a shared lock bucket. */
function fullSetup() {
  const stack = testStack()
  const accessLogs = new s3.Bucket(stack, 'AccessLogs', {
    enforceSSL: true,
    blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
  })
  const lockBucket = new LockBucket(stack, 'Locks', { bucketProps: { serverAccessLogsBucket: accessLogs } })
  const topic = new sns.Topic(stack, 'Alarms', { enforceSSL: true })
  const job = new ScheduledSingletonFunction(stack, 'Job', {
    entry: FIXTURE_ENTRY,
    lockBucket,
    schedules: [
      { name: 'nightly', expression: ScheduleExpression.cron({ minute: '0', hour: '3' }) },
      { name: 'catch-up', expression: ScheduleExpression.rate(Duration.hours(6)), description: 'every 6 h' },
    ],
    deadLetterQueueEnabled: true,
    alarms: { actions: [new actions.SnsAction(topic)] },
    functionProps: { memorySize: 512, environment: { STAGE: 'test' } },
  })
  return { stack, lockBucket, topic, job, template: Template.fromStack(stack) }
}

const full = fullSetup()
const fnId = ref(full.stack, full.job.function)
const fnArn = { 'Fn::GetAtt': [fnId, 'Arn'] }
const lockBucketId = ref(full.stack, full.lockBucket.createdBucket as s3.Bucket)
const queueId = ref(full.stack, full.job.singleton.deadLetterQueue as sqs.Queue)
const queueArn = { 'Fn::GetAtt': [queueId, 'Arn'] }

function schedulesOf(template: Template): Array<Record<string, unknown>> {
  return Object.values(template.findResources('AWS::Scheduler::Schedule') as Resources).map(
    (r) => r.Properties,
  )
}

/** The parsed event payload of each schedule, in order. */
function inputsOf(template: Template): unknown[] {
  return schedulesOf(template).map((s) => JSON.parse((s.Target as { Input: string }).Input))
}

describe('ScheduledSingletonFunction: the function', () => {
  it('runs on nodejs24.x with the bundle handler, a 5 minute default timeout and the given props', () => {
    full.template.hasResourceProperties('AWS::Lambda::Function', {
      Runtime: 'nodejs24.x',
      Handler: 'index.handler',
      Timeout: 300,
      MemorySize: 512,
    })
  })

  it('gets the environment variables the middleware reads, next to its own', () => {
    full.template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: {
        Variables: {
          [LOCK_ENV.store]: 's3',
          [LOCK_ENV.bucket]: { Ref: lockBucketId },
          [LOCK_ENV.keyPrefix]: DEFAULT_KEY_PREFIX,
          NODE_OPTIONS: '--enable-source-maps',
          STAGE: 'test',
        },
      },
    })
  })

  it('has its own role: write its log group, use its own lock, nothing else, no managed policy', () => {
    const logGroupId = ref(full.stack, full.job.logGroup as unknown as { node: { defaultChild?: unknown } })
    const roleId = ref(full.stack, full.job.function.role as unknown as { node: { defaultChild?: unknown } })
    const role = full.template.findResources('AWS::IAM::Role')[roleId] as {
      Properties: Record<string, unknown>
    }
    expect(role.Properties.ManagedPolicyArns).toBeUndefined()
    full.template.hasResourceProperties('AWS::IAM::Policy', {
      Roles: [{ Ref: roleId }],
      PolicyDocument: {
        Statement: [
          {
            Effect: 'Allow',
            Action: ['logs:CreateLogStream', 'logs:PutLogEvents'],
            Resource: { 'Fn::GetAtt': [logGroupId, 'Arn'] },
          },
          {
            Effect: 'Allow',
            Action: ['s3:GetObject', 's3:PutObject'],
            // Its own lock only: not `locks/*`, where every other job's lock is.
            Resource: { 'Fn::Join': ['', [{ 'Fn::GetAtt': [lockBucketId, 'Arn'] }, '/locks/Test/Job']] },
          },
        ],
      },
    })
    full.template.hasResourceProperties('AWS::Logs::LogGroup', { RetentionInDays: 30 })
  })
})

describe('ScheduledSingletonFunction: the schedules', () => {
  it('creates one schedule per entry with its expression, in UTC', () => {
    const schedules = schedulesOf(full.template)
    expect(schedules.map((s) => [s.ScheduleExpression, s.ScheduleExpressionTimezone, s.State])).toEqual([
      ['cron(0 3 * * ? *)', 'Etc/UTC', 'ENABLED'],
      ['rate(6 hours)', 'Etc/UTC', 'ENABLED'],
    ])
    expect(schedules[1]?.Description).toBe('every 6 h')
    expect(full.job.singleton.schedules).toHaveLength(2)
  })

  it('sends exactly { source, schedule, scheduledTime } with the scheduled-time context attribute', () => {
    expect(inputsOf(full.template)).toEqual([
      {
        source: SCHEDULER_EVENT_SOURCE,
        schedule: 'nightly',
        scheduledTime: '<aws.scheduler.scheduled-time>',
      },
      {
        source: SCHEDULER_EVENT_SOURCE,
        schedule: 'catch-up',
        scheduledTime: '<aws.scheduler.scheduled-time>',
      },
    ])
  })

  it('targets the function with the default retry policy and the dead-letter queue', () => {
    for (const schedule of schedulesOf(full.template)) {
      expect(schedule.Target).toMatchObject({
        Arn: fnArn,
        RetryPolicy: { MaximumRetryAttempts: 3, MaximumEventAgeInSeconds: 3600 },
        DeadLetterConfig: { Arn: queueArn },
      })
    }
  })

  it('creates an encrypted, TLS-only dead-letter queue kept 14 days', () => {
    full.template.hasResourceProperties('AWS::SQS::Queue', {
      SqsManagedSseEnabled: true,
      MessageRetentionPeriod: 1_209_600,
    })
    full.template.hasResourceProperties('AWS::SQS::QueuePolicy', {
      PolicyDocument: {
        Statement: [
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        ],
      },
    })
  })

  it('invokes through a role only Scheduler of this account can assume, allowed only to invoke and to dead-letter', () => {
    const roleId = ref(full.stack, full.job.singleton.scheduleRole)
    full.template.hasResourceProperties('AWS::IAM::Role', {
      AssumeRolePolicyDocument: {
        Statement: [
          {
            Action: 'sts:AssumeRole',
            Effect: 'Allow',
            Principal: { Service: 'scheduler.amazonaws.com' },
            Condition: {
              StringEquals: {
                'aws:SourceAccount': '111111111111',
                'aws:SourceArn': Match.objectLike({
                  'Fn::Join': [
                    '',
                    Match.arrayWith([':scheduler:eu-west-1:111111111111:schedule-group/default']),
                  ],
                }),
              },
            },
          },
        ],
      },
    })
    full.template.hasResourceProperties('AWS::IAM::Policy', {
      Roles: [{ Ref: roleId }],
      PolicyDocument: {
        Statement: [
          {
            Effect: 'Allow',
            Action: 'lambda:InvokeFunction',
            Resource: [fnArn, { 'Fn::Join': ['', [fnArn, ':*']] }],
          },
          { Effect: 'Allow', Action: 'sqs:SendMessage', Resource: queueArn },
        ],
      },
    })
    for (const schedule of schedulesOf(full.template)) {
      expect(schedule.Target).toMatchObject({ RoleArn: { 'Fn::GetAtt': [roleId, 'Arn'] } })
    }
  })
})

describe('ScheduledSingletonFunction: alarms and cdk-nag', () => {
  it('alarms on any failed run and on any undelivered tick, notifying the given actions', () => {
    const topicRef = { Ref: ref(full.stack, full.topic) }
    full.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'Errors',
      Namespace: 'AWS/Lambda',
      Statistic: 'Sum',
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      TreatMissingData: 'notBreaching',
      AlarmActions: [topicRef],
      OKActions: [topicRef],
    })
    full.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Namespace: 'AWS/SQS',
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [queueId, 'QueueName'] } }],
      AlarmActions: [topicRef],
    })
  })

  it('has no unacknowledged AwsSolutions finding', () => {
    expect(nagFindings(full.stack)).toEqual([])
  })

  it('acknowledges only findings that exist, each with a reason', () => {
    const raw = rawNagFindings(full.stack)
    const acks = nagAcknowledgements(full.stack)
    expect(acks.length).toBeGreaterThan(0)
    for (const ack of acks) {
      expect(ack.reason.length).toBeGreaterThan(40)
      expect(raw.some((f) => f.rule === ack.rule && f.path.startsWith(`${ack.path}/`))).toBe(true)
    }
  })
})

describe('ScheduledSingletonFunction: options', () => {
  it('takes a retry policy, a given dead-letter queue, a schedule group, time zones and disabled schedules', () => {
    const stack = testStack()
    const queue = new sqs.Queue(stack, 'Mine', { enforceSSL: true })
    const group = new ScheduleGroup(stack, 'Group')
    const job = new ScheduledSingletonFunction(stack, 'Job', {
      entry: FIXTURE_ENTRY,
      schedules: [
        {
          name: 'paris',
          expression: ScheduleExpression.cron({ minute: '30', hour: '1', timeZone: TimeZone.EUROPE_PARIS }),
          enabled: false,
        },
      ],
      scheduleGroup: group,
      retryAttempts: 0,
      maxEventAge: Duration.minutes(2),
      deadLetterQueue: queue,
      timeout: Duration.minutes(15),
    })
    const template = Template.fromStack(stack)
    const [schedule] = schedulesOf(template)
    expect(schedule).toMatchObject({
      ScheduleExpression: 'cron(30 1 * * ? *)',
      ScheduleExpressionTimezone: 'Europe/Paris',
      State: 'DISABLED',
      GroupName: stack.resolve(group.scheduleGroupName),
      Target: {
        RetryPolicy: { MaximumRetryAttempts: 0, MaximumEventAgeInSeconds: 120 },
        DeadLetterConfig: { Arn: { 'Fn::GetAtt': [ref(stack, queue), 'Arn'] } },
      },
    })
    template.resourceCountIs('AWS::SQS::Queue', 1)
    template.resourceCountIs('AWS::CloudWatch::Alarm', 0)
    template.hasResourceProperties('AWS::Lambda::Function', { Timeout: 900 })
    template.hasResourceProperties('AWS::IAM::Role', {
      AssumeRolePolicyDocument: {
        Statement: [
          Match.objectLike({
            Condition: {
              StringEquals: Match.objectLike({
                'aws:SourceArn': { 'Fn::GetAtt': [ref(stack, group), 'Arn'] },
              }),
            },
          }),
        ],
      },
    })
    expect(job.singleton.deadLetterQueue).toBe(queue)
    // Without a lock bucket given, the construct makes its own.
    template.resourceCountIs('AWS::S3::Bucket', 1)
  })

  it('has no dead-letter queue unless asked for one', () => {
    const stack = testStack()
    new ScheduledSingletonFunction(stack, 'Job', {
      entry: FIXTURE_ENTRY,
      schedules: [{ name: 'hourly', expression: ScheduleExpression.rate(Duration.hours(1)) }],
    })
    const template = Template.fromStack(stack)
    template.resourceCountIs('AWS::SQS::Queue', 0)
    expect(schedulesOf(template)[0]?.Target).not.toHaveProperty('DeadLetterConfig')
  })
})

describe('ScheduledSingleton: wiring an existing function', () => {
  it('adds the lock environment, the grant and the schedules to a function it did not create', () => {
    const stack = testStack()
    const fn = new lambda.Function(stack, 'Existing', {
      runtime: lambda.Runtime.NODEJS_24_X,
      handler: 'index.handler',
      code: lambda.Code.fromInline('export const handler = async () => "ok"'),
      environment: { KEEP: 'me' },
    })
    const lockBucket = new LockBucket(stack, 'Locks', { keyPrefix: 'mutex/' })
    const wiring = new ScheduledSingleton(stack, 'Singleton', {
      function: fn,
      lockBucket,
      schedules: [{ name: 'every-5', expression: ScheduleExpression.rate(Duration.minutes(5)) }],
    })
    expect(wiring.function).toBe(fn)
    const template = Template.fromStack(stack)
    const bucketId = ref(stack, lockBucket.createdBucket as s3.Bucket)
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: {
        Variables: { KEEP: 'me', [LOCK_ENV.bucket]: { Ref: bucketId }, [LOCK_ENV.keyPrefix]: 'mutex/' },
      },
    })
    template.hasResourceProperties('AWS::IAM::Policy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          {
            Effect: 'Allow',
            Action: ['s3:GetObject', 's3:PutObject'],
            Resource: { 'Fn::Join': ['', [{ 'Fn::GetAtt': [bucketId, 'Arn'] }, '/mutex/Test/Existing']] },
          },
        ]),
      },
    })
    expect(inputsOf(template)).toEqual([
      {
        source: SCHEDULER_EVENT_SOURCE,
        schedule: 'every-5',
        scheduledTime: '<aws.scheduler.scheduled-time>',
      },
    ])
  })
})

describe('validation at synth', () => {
  const base: ScheduledSingletonFunctionProps = {
    entry: FIXTURE_ENTRY,
    schedules: [{ name: 'ok', expression: ScheduleExpression.rate(Duration.minutes(5)) }],
  }
  const expr = (expression: string) => [
    { name: 'bad', expression: ScheduleExpression.expression(expression) },
  ]
  const cases: Array<[string, Partial<ScheduledSingletonFunctionProps>, RegExp]> = [
    ['no schedule', { schedules: [] }, /at least one schedule/],
    [
      'a schedule name with a space',
      { schedules: [{ name: 'two words', expression: ScheduleExpression.rate(Duration.hours(1)) }] },
      /name "two words" must be 1-64 letters/,
    ],
    [
      'the same name twice',
      {
        schedules: [
          { name: 'a', expression: ScheduleExpression.rate(Duration.hours(1)) },
          { name: 'a', expression: ScheduleExpression.rate(Duration.hours(2)) },
        ],
      },
      /name "a" is used twice/,
    ],
    ['a five-field cron', { schedules: expr('cron(0 3 * * ?)') }, /six fields.*found 5/],
    [
      'a cron without "?"',
      { schedules: expr('cron(0 3 * * * *)') },
      /exactly one of day-of-month and day-of-week/,
    ],
    ['a rate of zero', { schedules: expr('rate(0 minutes)') }, /at least 1/],
    ['something else', { schedules: expr('every day at 3') }, /not a rate\(...\), cron\(...\) or at\(...\)/],
    [
      'a timeout over 15 minutes',
      { timeout: Duration.minutes(16) },
      /timeout 16 minutes is over Lambda's 15 minute/,
    ],
    [
      '186 retry attempts',
      { retryAttempts: 186 },
      /retryAttempts must be a whole number from 0 to 185, got 186/,
    ],
    ['a fractional retry count', { retryAttempts: 1.5 }, /retryAttempts must be a whole number/],
    [
      'a max event age of 2 days',
      { maxEventAge: Duration.days(2) },
      /maxEventAge must be from 1 minute to 24 hours/,
    ],
    ['a max event age of 30 s', { maxEventAge: Duration.seconds(30) }, /maxEventAge must be from 1 minute/],
    [
      'an error threshold of 0',
      { alarms: { errorThreshold: 0 } },
      /errorThreshold must be a whole number >= 1/,
    ],
  ]

  it.each(cases)('refuses %s with a ValidationError naming the construct', (_name, props, message) => {
    const error = thrown(() => new ScheduledSingletonFunction(testStack(), 'Job', { ...base, ...props }))
    expect(error).toBeInstanceOf(SingletonValidationError)
    expect(error.name).toBe('ValidationError')
    expect(error.message).toMatch(message)
    expect(error.message).toMatch(/\(at Test\/Job(\/Singleton)?\)$/)
    expect(Errors.isValidationError(error)).toBe(true)
  })

  it('accepts the edges: 0 and 185 retries, 1 minute and 24 hours of age, a one-time schedule', () => {
    const stack = testStack()
    for (const [i, [retryAttempts, maxEventAge]] of (
      [
        [0, Duration.minutes(1)],
        [185, Duration.hours(24)],
      ] as const
    ).entries()) {
      new ScheduledSingletonFunction(stack, `Job${i}`, {
        ...base,
        retryAttempts,
        maxEventAge,
        schedules: [{ name: 'once', expression: ScheduleExpression.at(new Date('2030-01-01T00:00:00Z')) }],
      })
    }
    expect(schedulesOf(Template.fromStack(stack)).map((s) => s.ScheduleExpression)).toEqual([
      'at(2030-01-01T00:00:00)',
      'at(2030-01-01T00:00:00)',
    ])
  })
})
