import { execFileSync, spawnSync } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Duration, type Stack, Validations } from 'aws-cdk-lib'
import { Match, Template } from 'aws-cdk-lib/assertions'
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions'
import * as ec2 from 'aws-cdk-lib/aws-ec2'
import * as ecs from 'aws-cdk-lib/aws-ecs'
import * as s3 from 'aws-cdk-lib/aws-s3'
import { ScheduleExpression } from 'aws-cdk-lib/aws-scheduler'
import * as sns from 'aws-cdk-lib/aws-sns'
import * as sqs from 'aws-cdk-lib/aws-sqs'
import { describe, expect, it } from 'vitest'
import { RebuildStack } from '../../examples/beyond-lambda/task-stack.js'
import { LockBucket, LockTable, ScheduledSingletonTask, SingletonValidationError } from '../../infra/index.js'
import { execLine } from '../../lib/cli/exec-args.js'
import { resolveOptions } from '../../lib/lifecycle/options.js'
import { MemoryLockStore } from '../../lib/memory/index.js'
import { nagFindings, testStack, thrown } from './support.js'

type Resources = Record<string, { Type: string; Properties: Record<string, unknown> }>

const ref = (stack: Stack, construct: { node: { defaultChild?: unknown } }) =>
  stack.getLogicalId(construct.node.defaultChild as never)

const image = ecs.ContainerImage.fromRegistry('public.ecr.aws/docker/library/node:24-slim')

function bucketSetup() {
  const stack = testStack()
  const accessLogs = new s3.Bucket(stack, 'AccessLogs', {
    enforceSSL: true,
    blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
  })
  const locks = new LockBucket(stack, 'Locks', { bucketProps: { serverAccessLogsBucket: accessLogs } })
  const topic = new sns.Topic(stack, 'Alarms', { enforceSSL: true })
  const dlq = new sqs.Queue(stack, 'Dlq', { enforceSSL: true, encryption: sqs.QueueEncryption.SQS_MANAGED })
  Validations.of(dlq).acknowledge({ id: 'AwsSolutions-SQS3', reason: 'the test’s own dead-letter queue' })
  const task = new ScheduledSingletonTask(stack, 'Rebuild', {
    image,
    command: ['node', 'rebuild.js'],
    lockBucket: locks,
    lockKey: 'rebuild-index',
    schedules: [{ name: 'hourly', expression: ScheduleExpression.rate(Duration.hours(1)) }],
    deadLetterQueue: dlq,
    alarms: { actions: [new actions.SnsAction(topic)] },
  })
  return { stack, locks, task, template: Template.fromStack(stack) }
}

const bucket = bucketSetup()

/** Every statement of the policies attached to `roleId`. */
function statementsOf(template: Template, roleId: string): unknown[] {
  const policies = template.findResources('AWS::IAM::Policy') as Resources
  return Object.values(policies)
    .filter((policy) =>
      (policy.Properties.Roles as unknown[]).some(
        (role) => JSON.stringify(role) === JSON.stringify({ Ref: roleId }),
      ),
    )
    .flatMap((policy) => (policy.Properties.PolicyDocument as { Statement: unknown[] }).Statement)
}

/** The container command of `task`, as synthesized (tokens resolved). */
function commandOf(stack: Stack, task: ScheduledSingletonTask): string[] {
  const template = Template.fromStack(stack).toJSON() as { Resources: Resources }
  const id = ref(stack, task.taskDefinition)
  const definitions = template.Resources[id]?.Properties.ContainerDefinitions as Array<{ Command: string[] }>
  return definitions[0]?.Command ?? []
}

function argAfter(args: readonly string[], option: string): string {
  const value = args[args.indexOf(option) + 1]
  if (args.indexOf(option) < 0 || typeof value !== 'string') throw new Error(`no ${option} in ${args}`)
  return value
}

/** Whether exec would run with this --ttl and --kill-after: its parser, then its lifecycle's options. */
function execAccepts(ttl: string, killAfter: string): boolean {
  try {
    const settings = execLine({ ttl, 'kill-after': killAfter }, ['x'])
    // As exec's adapter builds its lifecycle: the whole key, the default heartbeat and margin.
    resolveOptions({ store: new MemoryLockStore(), keyPrefix: '', key: 'k', ttlMs: settings.ttlMs }, 'exec')
    return true
  } catch {
    return false
  }
}

describe('ScheduledSingletonTask', () => {
  const { stack, locks, task, template } = bucket
  const taskRoleId = ref(stack, task.taskDefinition.taskRole as never)
  const bucketId = ref(stack, locks.createdBucket as s3.Bucket)

  it('wraps the command in lambda-singleton exec on its own lock key', () => {
    template.hasResourceProperties('AWS::ECS::TaskDefinition', {
      RequiresCompatibilities: ['FARGATE'],
      ContainerDefinitions: [
        Match.objectLike({
          Name: 'job',
          Command: [
            'npx',
            '--no',
            'lambda-singleton',
            'exec',
            '--bucket',
            { Ref: bucketId },
            '--key',
            'locks/rebuild-index',
            '--ttl',
            '120s',
            '--kill-after',
            '10s',
            '--json',
            '--',
            'node',
            'rebuild.js',
          ],
        }),
      ],
    })
    expect(task.fullLockKey).toBe('locks/rebuild-index')
  })

  it('grants the task role GetObject and PutObject on its one key, and nothing else', () => {
    expect(statementsOf(template, taskRoleId)).toEqual([
      {
        Action: ['s3:GetObject', 's3:PutObject'],
        Effect: 'Allow',
        Resource: { 'Fn::Join': ['', [{ 'Fn::GetAtt': [bucketId, 'Arn'] }, '/locks/rebuild-index']] },
      },
    ])
  })

  it('runs the task from Scheduler: FARGATE, ecs:RunTask on the task definition, PassRole of its roles', () => {
    const taskDefinitionId = ref(stack, task.taskDefinition)
    template.hasResourceProperties('AWS::Scheduler::Schedule', {
      ScheduleExpression: 'rate(1 hour)',
      Target: Match.objectLike({
        Arn: { 'Fn::GetAtt': [ref(stack, task.cluster as ecs.Cluster), 'Arn'] },
        RoleArn: { 'Fn::GetAtt': [ref(stack, task.scheduleRole), 'Arn'] },
        EcsParameters: Match.objectLike({
          LaunchType: 'FARGATE',
          TaskDefinitionArn: { Ref: taskDefinitionId },
          NetworkConfiguration: { AwsvpcConfiguration: Match.objectLike({ AssignPublicIp: 'ENABLED' }) },
        }),
        RetryPolicy: { MaximumRetryAttempts: 3, MaximumEventAgeInSeconds: 3600 },
      }),
    })
    const statements = JSON.stringify(statementsOf(template, ref(stack, task.scheduleRole)))
    expect(statements).toContain('"ecs:RunTask"')
    expect(statements).toContain('"iam:PassRole"')
    expect(statements).toContain(`"${taskDefinitionId}"`)
    expect(statements).not.toContain('"s3:')
  })

  it('alarms on failed runs, lost leases and undelivered ticks, from exec’s log lines', () => {
    template.hasResourceProperties('AWS::Logs::MetricFilter', {
      FilterPattern: '{ $.outcome = "lost" }',
      MetricTransformations: [Match.objectLike({ MetricName: 'Lost', MetricNamespace: 'LambdaSingleton' })],
    })
    expect(task.alarms.map((alarm) => alarm.node.id)).toEqual([
      'FailedRunsAlarm',
      'LostLeaseAlarm',
      'DeadLetterAlarm',
      'MissedRunAlarm',
      'PausedAlarm',
    ])
    template.resourceCountIs('AWS::CloudWatch::Alarm', 5)
  })

  it('names each alarm as ScheduledSingleton does, and lists them', () => {
    expect(task.failedRunsAlarm?.node.id).toBe('FailedRunsAlarm')
    expect(task.lostLeaseAlarm?.node.id).toBe('LostLeaseAlarm')
    expect(task.deadLetterAlarm?.node.id).toBe('DeadLetterAlarm')
    expect(task.missedRunAlarm?.node.id).toBe('MissedRunAlarm')
    expect(task.pausedAlarm?.node.id).toBe('PausedAlarm')
    expect(task.runTooLongAlarm).toBeUndefined()
    expect(task.alarms).toHaveLength(5)
  })

  it('makes its own dead-letter queue with deadLetterQueueEnabled, as ScheduledSingleton does', () => {
    const stack = testStack()
    const made = new ScheduledSingletonTask(stack, 'Job', {
      image,
      command: ['node', 'job.js'],
      schedules: [{ name: 'hourly', expression: ScheduleExpression.rate(Duration.hours(1)) }],
      deadLetterQueueEnabled: true,
    })
    expect(made.deadLetterQueue).toBeDefined()
    const queueId = ref(stack, made.deadLetterQueue as never)
    Template.fromStack(stack).hasResourceProperties('AWS::Scheduler::Schedule', {
      Target: Match.objectLike({ DeadLetterConfig: { Arn: { 'Fn::GetAtt': [queueId, 'Arn'] } } }),
    })
    // Encrypted, TLS only, and acknowledged as the dead-letter queue it is.
    expect(nagFindings(made.deadLetterQueue as never).map((finding) => finding.rule)).toEqual([])
  })

  it('refuses a lock bucket and a lock table at once, with the words ScheduledSingleton uses', () => {
    const stack = testStack()
    const error = thrown(
      () =>
        new ScheduledSingletonTask(stack, 'Job', {
          image,
          command: ['node', 'job.js'],
          schedules: [{ name: 'hourly', expression: ScheduleExpression.rate(Duration.hours(1)) }],
          lockBucket: new LockBucket(stack, 'Locks'),
          lockTable: new LockTable(stack, 'Table'),
        }),
    )
    expect(error.message).toMatch(/either `lockBucket` \(S3\) or `lockTable` \(DynamoDB\)/)
  })

  it('alarms when no run completed within two schedule intervals, counting exec’s completed releases', () => {
    template.hasResourceProperties('AWS::Logs::MetricFilter', {
      FilterPattern: '{ ($.outcome = "released") && ($.completed IS TRUE) }',
      MetricTransformations: [
        Match.objectLike({ MetricName: 'Completed', MetricNamespace: 'LambdaSingleton', MetricValue: '1' }),
      ],
    })
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'Completed',
      Dimensions: [{ Name: 'LockKey', Value: 'locks/rebuild-index' }],
      Period: 3600,
      EvaluationPeriods: 3,
      ComparisonOperator: 'LessThanThreshold',
      Threshold: 1,
      TreatMissingData: 'breaching',
    })
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'Paused',
      ComparisonOperator: 'GreaterThanThreshold',
    })
  })

  it('has no run-too-long alarm unless given maxRunTime (a task has no timeout to derive it from)', () => {
    template.resourceCountIs('AWS::Logs::MetricFilter', 4) // failed, lost, completed, paused
    const stack = testStack()
    const locks = new LockBucket(stack, 'Locks')
    const timed = new ScheduledSingletonTask(stack, 'Timed', {
      image,
      command: ['node', 'rebuild.js'],
      lockBucket: locks,
      lockKey: 'rebuild-index',
      schedules: [{ name: 'hourly', expression: ScheduleExpression.rate(Duration.hours(1)) }],
      alarms: { maxRunTime: Duration.minutes(30), missedRuns: false, paused: false },
    })
    expect(timed.alarms.map((alarm) => alarm.node.id)).toEqual([
      'FailedRunsAlarm',
      'LostLeaseAlarm',
      'RunTooLongAlarm',
    ])
    Template.fromStack(stack).hasResourceProperties('AWS::Logs::MetricFilter', {
      FilterPattern: '{ $.outcome = "released" }',
      MetricTransformations: [Match.objectLike({ MetricName: 'HeldMs', MetricValue: '$.heldMs' })],
    })
    Template.fromStack(stack).hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'HeldMs',
      Statistic: 'Maximum',
      Threshold: 30 * 60 * 1000,
    })
  })

  it('is cdk-nag clean', () => {
    expect(nagFindings(stack)).toEqual([])
  })

  it('on a table: GetItem, PutItem and UpdateItem on the one item', () => {
    const stack = testStack()
    const table = new LockTable(stack, 'Locks', { partitionKey: 'lock_id' })
    const task = new ScheduledSingletonTask(stack, 'Billing', {
      image,
      command: ['./bill.sh'],
      lockTable: table,
      vpc: new ec2.Vpc(stack, 'Vpc', { natGateways: 1, maxAzs: 2 }),
      schedules: [{ name: 'daily', expression: ScheduleExpression.cron({ hour: '2', minute: '0' }) }],
    })
    const template = Template.fromStack(stack)
    const taskRoleId = ref(stack, task.taskDefinition.taskRole as never)
    expect(statementsOf(template, taskRoleId)).toEqual([
      {
        Action: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
        Condition: { 'ForAllValues:StringEquals': { 'dynamodb:LeadingKeys': ['locks/Test/Billing'] } },
        Effect: 'Allow',
        Resource: { 'Fn::GetAtt': [ref(stack, table.table as never), 'Arn'] },
      },
    ])
    const command = JSON.stringify(template.toJSON()).match(/"--table",[^\]]*?"--"/)?.[0]
    expect(command).toContain('"--partition-key","lock_id","--key","locks/Test/Billing"')
  })

  it('passes pauseAfterFailures on to exec, and refuses one that is not a whole number of runs', () => {
    const stack = testStack()
    const schedules = [{ name: 'x', expression: ScheduleExpression.rate(Duration.hours(1)) }]
    new ScheduledSingletonTask(stack, 'Flaky', { image, command: ['x'], schedules, pauseAfterFailures: 3 })
    const command = JSON.stringify(Template.fromStack(stack).toJSON()).match(
      /"--kill-after",[^\]]*?"--"/,
    )?.[0]
    expect(command).toBe('"--kill-after","10s","--pause-after-failures","3","--json","--"')
    for (const wrong of [0, 1.5, -1, Number.NaN]) {
      expect(
        thrown(
          () =>
            new ScheduledSingletonTask(stack, `Wrong${String(wrong)}`, {
              image,
              command: ['x'],
              schedules,
              pauseAfterFailures: wrong,
            }),
        ).message,
      ).toMatch(/pauseAfterFailures must be a whole number/)
    }
  })

  it('refuses props that cannot work', () => {
    const stack = testStack()
    const schedules = [{ name: 'x', expression: ScheduleExpression.rate(Duration.hours(1)) }]
    expect(
      thrown(() => new ScheduledSingletonTask(stack, 'A', { image, command: [], schedules })),
    ).toBeInstanceOf(SingletonValidationError)
    expect(
      thrown(() => new ScheduledSingletonTask(stack, 'B', { image, command: ['x'], schedules: [] })).message,
    ).toMatch(/at least one schedule/)
  })

  it('refuses a ttl that exec would refuse at every run: its heartbeat must fit above the clock-skew margin', () => {
    const stack = testStack()
    const schedules = [{ name: 'x', expression: ScheduleExpression.rate(Duration.hours(1)) }]
    for (const ttl of [Duration.seconds(3), Duration.seconds(2), Duration.millis(1)]) {
      const error = thrown(
        () =>
          new ScheduledSingletonTask(stack, `Short${ttl.toMilliseconds()}`, {
            image,
            command: ['x'],
            schedules,
            ttl,
          }),
      )
      expect(error).toBeInstanceOf(SingletonValidationError)
      expect(error.message).toMatch(/ttl .* at least 3001 milliseconds/)
    }
  })

  it('agrees with exec on every ttl: what it synthesizes, exec takes; what exec refuses, it refuses', () => {
    const schedules = [{ name: 'x', expression: ScheduleExpression.rate(Duration.hours(1)) }]
    const week = 7 * 24 * 3_600_000
    for (const ms of [1, 1999, 2000, 2001, 3000, 3001, 3002, 4500, 6000, 60_000, 120_000, week, week + 1]) {
      const stack = testStack()
      let args: string[] | undefined
      try {
        const ttl = Duration.millis(ms)
        args = commandOf(
          stack,
          new ScheduledSingletonTask(stack, 'Job', { image, command: ['x'], schedules, ttl }),
        )
      } catch (error) {
        expect(error, `ttl ${ms} ms`).toBeInstanceOf(SingletonValidationError)
      }
      if (args === undefined) {
        expect(execAccepts(`${ms}ms`, '10s'), `ttl ${ms} ms, refused at synth`).toBe(false)
      } else {
        const ttl = argAfter(args, '--ttl')
        expect(execAccepts(ttl, argAfter(args, '--kill-after')), `ttl ${ms} ms, synthesized`).toBe(true)
        expect(execLine({ ttl }, ['x']).ttlMs, `ttl ${ms} ms`).toBe(ms)
      }
    }
  })

  it('passes sub-second durations to exec in milliseconds, whole seconds in seconds', () => {
    const stack = testStack()
    const schedules = [{ name: 'x', expression: ScheduleExpression.rate(Duration.hours(1)) }]
    const task = new ScheduledSingletonTask(stack, 'Precise', {
      image,
      command: ['x'],
      schedules,
      ttl: Duration.millis(4500),
      killAfter: Duration.millis(500),
    })
    const args = commandOf(stack, task)
    expect([argAfter(args, '--ttl'), argAfter(args, '--kill-after')]).toEqual(['4500ms', '500ms'])
    const settings = execLine({ ttl: '4500ms', 'kill-after': '500ms' }, ['x'])
    expect([settings.ttlMs, settings.killAfterMs]).toEqual([4500, 500])
  })

  it('synthesizes the example of docs/beyond-lambda.md, cdk-nag clean', () => {
    const stack = new RebuildStack(testStack().node.root as never, 'Rebuild')
    const template = Template.fromStack(stack)
    template.resourceCountIs('AWS::Scheduler::Schedule', 1)
    template.hasResourceProperties('AWS::ECS::TaskDefinition', { Cpu: '1024', Memory: '4096' })
    expect(nagFindings(stack)).toEqual([])
  })

  it('passes cfn-lint', () => {
    let installed = true
    try {
      execFileSync('cfn-lint', ['--version'], { stdio: 'ignore' })
    } catch {
      installed = false
    }
    if (!installed) {
      console.warn('cfn-lint is not installed: skipped')
      return
    }
    const dir = mkdtempSync(join(tmpdir(), 'task-lint-'))
    const file = join(dir, 'template.json')
    writeFileSync(file, JSON.stringify(template.toJSON()))
    // Errors only (exit bit 2): the warnings are the test stack's own (dummy AZs of the test
    // environment, the access-log bucket's ACL).
    const lint = spawnSync('cfn-lint', ['--', file], { encoding: 'utf8' })
    expect(lint.status === null ? 2 : lint.status & 2, lint.stdout).toBe(0)
  })
})
