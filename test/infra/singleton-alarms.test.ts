import { execFile, spawnSync } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { Duration, type Stack, TimeZone } from 'aws-cdk-lib'
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions'
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions'
import { ScheduleExpression, TimeWindow } from 'aws-cdk-lib/aws-scheduler'
import * as sns from 'aws-cdk-lib/aws-sns'
import { describe, expect, it } from 'vitest'
import {
  ScheduledSingletonFunction,
  type ScheduledSingletonFunctionProps,
  SingletonValidationError,
} from '../../infra/index.js'
import { longestGap } from '../../infra/private/schedule-gap.js'
import { LOCK_ENV } from '../../lib/config.js'
import { FIXTURE_ENTRY, nagFindings, testStack, thrown } from './support.js'

const MINUTE = 60_000
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR

const hourly = [{ name: 'hourly', expression: ScheduleExpression.rate(Duration.hours(1)) }]

function job(stack: Stack, props: Partial<ScheduledSingletonFunctionProps> = {}) {
  return new ScheduledSingletonFunction(stack, 'Job', { entry: FIXTURE_ENTRY, schedules: hourly, ...props })
}

/** The one alarm on `metricName`, as CloudFormation gets it. */
function alarmOn(template: Template, metricName: string): Record<string, unknown> {
  const found = Object.values(
    template.findResources('AWS::CloudWatch::Alarm', { Properties: { MetricName: metricName } }),
  ) as Array<{ Properties: Record<string, unknown> }>
  expect(found, `alarms on ${metricName}`).toHaveLength(1)
  return found[0]?.Properties ?? {}
}

const fnDimension = (stack: Stack, fn: ScheduledSingletonFunction) => [
  { Name: 'FunctionName', Value: { Ref: stack.getLogicalId(fn.function.node.defaultChild as never) } },
]

describe('the missed-run alarm', () => {
  it('fires when no run completed within 2 schedule intervals and one more period, counting missing data as breaching', () => {
    const stack = testStack()
    const topic = new sns.Topic(stack, 'Topic', { enforceSSL: true })
    const fn = job(stack, { metrics: {}, alarms: { actions: [new actions.SnsAction(topic)] } })
    const topicRef = { Ref: stack.getLogicalId(topic.node.defaultChild as never) }
    expect(alarmOn(Template.fromStack(stack), 'Completed')).toEqual(
      expect.objectContaining({
        Namespace: 'LambdaSingleton',
        Dimensions: fnDimension(stack, fn),
        Statistic: 'Sum',
        Period: 3_600, // the schedule's interval
        EvaluationPeriods: 3, // 2 intervals, and one more period
        DatapointsToAlarm: 3,
        Threshold: 1,
        ComparisonOperator: 'LessThanThreshold',
        TreatMissingData: 'breaching',
        AlarmActions: [topicRef],
        OKActions: [topicRef],
      }),
    )
    expect(fn.singleton.missedRunAlarm).toBeDefined()
  })

  it.each<[string, ScheduledSingletonFunctionProps['schedules'], number, number]>([
    ['every 15 minutes', [{ name: 'q', expression: ScheduleExpression.rate(Duration.minutes(15)) }], 900, 3],
    [
      'nightly (cron)',
      [{ name: 'n', expression: ScheduleExpression.cron({ hour: '3', minute: '0' }) }],
      86_400,
      3,
    ],
    [
      'on weekdays: the weekend is the longest gap (3 days, in periods of one day)',
      [{ name: 'w', expression: ScheduleExpression.cron({ hour: '9', minute: '0', weekDay: 'MON-FRI' }) }],
      86_400,
      7,
    ],
    [
      'hourly and nightly: the hourly schedule bounds the gap',
      [
        { name: 'h', expression: ScheduleExpression.rate(Duration.hours(1)) },
        { name: 'n', expression: ScheduleExpression.cron({ hour: '3', minute: '0' }) },
      ],
      3_600,
      3,
    ],
    [
      'a disabled hourly schedule and a nightly one: only enabled schedules count',
      [
        { name: 'h', expression: ScheduleExpression.rate(Duration.hours(1)), enabled: false },
        { name: 'n', expression: ScheduleExpression.cron({ hour: '3', minute: '0' }) },
      ],
      86_400,
      3,
    ],
  ])(
    'takes its period and evaluation periods from the schedules: %s',
    (_, schedules, period, evaluations) => {
      const stack = testStack()
      job(stack, { schedules, metrics: {}, alarms: {} })
      expect(alarmOn(Template.fromStack(stack), 'Completed')).toMatchObject({
        Period: period,
        EvaluationPeriods: evaluations,
        DatapointsToAlarm: evaluations,
      })
    },
  )

  it('counts missedRuns intervals, and scheduleInterval overrides the schedules’', () => {
    const stack = testStack()
    job(stack, { metrics: {}, alarms: { missedRuns: 4, scheduleInterval: Duration.minutes(30) } })
    expect(alarmOn(Template.fromStack(stack), 'Completed')).toMatchObject({
      Period: 1_800,
      EvaluationPeriods: 5,
    })
  })

  it('is left out, with a synth warning, when the schedule’s interval cannot be told or is longer than an alarm can watch', () => {
    for (const expression of [
      ScheduleExpression.cron({ day: 'L', hour: '23', minute: '30' }), // month-end
      ScheduleExpression.rate(Duration.days(7)), // 2 weeks and a day: over CloudWatch's 7 days
    ]) {
      const stack = testStack()
      job(stack, { schedules: [{ name: 's', expression }], metrics: {}, alarms: {} })
      Template.fromStack(stack).resourcePropertiesCountIs(
        'AWS::CloudWatch::Alarm',
        { MetricName: 'Completed' },
        0,
      )
      Annotations.fromStack(stack).hasWarning(
        '/Test/Job/Singleton',
        Match.stringLikeRegexp('no missed-run alarm'),
      )
    }
  })

  it('fails synth when asked for (missedRuns given) but its interval cannot be told', () => {
    const monthly = [
      { name: 'm', expression: ScheduleExpression.cron({ day: 'L', hour: '23', minute: '30' }) },
    ]
    const error = thrown(() =>
      job(testStack(), { schedules: monthly, metrics: {}, alarms: { missedRuns: 1 } }),
    )
    expect(error).toBeInstanceOf(SingletonValidationError)
    expect(error.message).toMatch(/alarms.missedRuns.*scheduleInterval/)
  })

  it('is left out for one-time schedules (nothing to miss) and with missedRuns: false', () => {
    for (const props of [
      { schedules: [{ name: 'once', expression: ScheduleExpression.at(new Date('2030-01-01T00:00:00Z')) }] },
      { alarms: { missedRuns: false as const } },
    ]) {
      const stack = testStack()
      const fn = job(stack, { metrics: {}, alarms: {}, ...props })
      Template.fromStack(stack).resourcePropertiesCountIs(
        'AWS::CloudWatch::Alarm',
        { MetricName: 'Completed' },
        0,
      )
      expect(fn.singleton.missedRunAlarm).toBeUndefined()
    }
  })
})

describe('the run-too-long alarm', () => {
  it('fires on a HeldMs maximum above 80% of the function’s timeout by default', () => {
    const stack = testStack()
    const fn = job(stack, {
      timeout: Duration.minutes(10),
      metrics: {},
      alarms: { period: Duration.minutes(1) },
    })
    expect(alarmOn(Template.fromStack(stack), 'HeldMs')).toEqual(
      expect.objectContaining({
        Dimensions: fnDimension(stack, fn),
        Statistic: 'Maximum',
        Period: 60, // the alarms' period
        EvaluationPeriods: 1,
        Threshold: 480_000,
        ComparisonOperator: 'GreaterThanThreshold',
        TreatMissingData: 'notBreaching',
      }),
    )
  })

  it('takes maxRunTime, and is left out with maxRunTime: false', () => {
    const stack = testStack()
    job(stack, { metrics: {}, alarms: { maxRunTime: Duration.minutes(2) } })
    expect(alarmOn(Template.fromStack(stack), 'HeldMs')).toMatchObject({ Threshold: 120_000 })
    const without = testStack()
    job(without, { metrics: {}, alarms: { maxRunTime: false } })
    Template.fromStack(without).resourcePropertiesCountIs(
      'AWS::CloudWatch::Alarm',
      { MetricName: 'HeldMs' },
      0,
    )
  })
})

describe('the lost and paused alarms', () => {
  it('fire on any Lost in the alarms’ period, and while any tick was paused in the last two schedule intervals', () => {
    const stack = testStack()
    const fn = job(stack, { metrics: {}, alarms: {} })
    const template = Template.fromStack(stack)
    expect(alarmOn(template, 'Lost')).toMatchObject({
      Dimensions: fnDimension(stack, fn),
      Statistic: 'Sum',
      Period: 300,
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
      TreatMissingData: 'notBreaching',
    })
    expect(alarmOn(template, 'Paused')).toMatchObject({
      Dimensions: fnDimension(stack, fn),
      Statistic: 'Sum',
      Period: 3_600,
      EvaluationPeriods: 2,
      DatapointsToAlarm: 1,
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
      TreatMissingData: 'notBreaching',
    })
    expect(fn.singleton.pausedAlarm).toBeDefined()
  })

  it('are left out with lost: false and paused: false', () => {
    const stack = testStack()
    job(stack, { metrics: {}, alarms: { lost: false, paused: false } })
    const template = Template.fromStack(stack)
    for (const metric of ['Lost', 'Paused']) {
      template.resourcePropertiesCountIs('AWS::CloudWatch::Alarm', { MetricName: metric }, 0)
    }
  })
})

describe('alarms on the middleware’s metrics need metrics', () => {
  it('are not made by alarms alone: only the errors alarm, which reads Lambda’s own metric', () => {
    const stack = testStack()
    job(stack, { alarms: {} })
    Template.fromStack(stack).resourceCountIs('AWS::CloudWatch::Alarm', 1)
  })

  it.each([
    ['missedRuns', { missedRuns: 2 }],
    ['maxRunTime', { maxRunTime: Duration.minutes(1) }],
    ['lost', { lost: true }],
    ['paused', { paused: true }],
  ])('fail synth when %s is asked for without metrics: the alarm could never fire', (name, alarms) => {
    const error = thrown(() => job(testStack(), { alarms }))
    expect(error).toBeInstanceOf(SingletonValidationError)
    expect(error.message).toContain(`alarms.${name} needs \`metrics\``)
  })

  it.each([
    ['missedRuns of 0', { missedRuns: 0 }, /missedRuns must be a whole number/],
    ['a fractional missedRuns', { missedRuns: 1.5 }, /missedRuns must be a whole number/],
    ['a scheduleInterval under a minute', { scheduleInterval: Duration.seconds(30) }, /at least 1 minute/],
    ['a maxRunTime of 0', { maxRunTime: Duration.seconds(0) }, /maxRunTime must be above 0/],
  ])('refuse %s at synth', (_, alarms, message) => {
    const error = thrown(() => job(testStack(), { metrics: {}, alarms }))
    expect(error).toBeInstanceOf(SingletonValidationError)
    expect(error.message).toMatch(message)
  })

  it('pass cdk-nag', () => {
    const stack = testStack()
    job(stack, { metrics: {}, alarms: {}, maxTickAge: Duration.minutes(30) })
    expect(nagFindings(stack).filter((f) => !f.path.includes('LockBucket/Bucket'))).toEqual([])
  })
})

describe('maxTickAge', () => {
  it('gives the function LAMBDA_SINGLETON_MAX_TICK_AGE_MS, which the middleware reads', () => {
    const stack = testStack()
    job(stack, { maxTickAge: Duration.minutes(30) })
    Template.fromStack(stack).hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ [LOCK_ENV.maxTickAgeMs]: '1800000' }) },
    })
  })

  it('is not set by default: ticks run however late', () => {
    const stack = testStack()
    job(stack)
    expect(JSON.stringify(Template.fromStack(stack).toJSON())).not.toContain(LOCK_ENV.maxTickAgeMs)
  })

  it('refuses 0 at synth', () => {
    const error = thrown(() => job(testStack(), { maxTickAge: Duration.seconds(0) }))
    expect(error).toBeInstanceOf(SingletonValidationError)
    expect(error.message).toMatch(/maxTickAge must be a finite number of ms above 0/)
  })
})

describe('longestGap: how long a schedule may go without a tick', () => {
  it.each<[string, ReturnType<typeof ScheduleExpression.rate>, number]>([
    ['rate(5 minutes)', ScheduleExpression.rate(Duration.minutes(5)), 5 * MINUTE],
    ['rate(1 day)', ScheduleExpression.rate(Duration.days(1)), DAY],
    ['every 15 minutes (cron)', ScheduleExpression.cron({ minute: '0/15' }), 15 * MINUTE],
    ['at 03:00 and 15:00', ScheduleExpression.cron({ minute: '0', hour: '3,15' }), 12 * HOUR],
    ['at 01:00 and 03:00', ScheduleExpression.cron({ minute: '0', hour: '1,3' }), 22 * HOUR],
    ['on weekdays', ScheduleExpression.cron({ minute: '0', hour: '9', weekDay: 'MON-FRI' }), 3 * DAY],
    ['on weekends (a range by number)', ScheduleExpression.expression('cron(0 9 ? * 7,1 *)'), 6 * DAY],
    [
      'on Fridays to Mondays (a range that wraps)',
      ScheduleExpression.expression('cron(0 9 ? * FRI-MON *)'),
      4 * DAY,
    ],
    [
      'nightly in Paris: an hour more for daylight saving',
      ScheduleExpression.cron({ minute: '0', hour: '3', timeZone: TimeZone.EUROPE_PARIS }),
      DAY + HOUR,
    ],
  ])('%s', (_, expression, expected) => {
    expect(longestGap(expression)).toEqual({ kind: 'recurring', longestMs: expected })
  })

  it('adds a flexible time window: a tick may come that much later', () => {
    const gap = longestGap(
      ScheduleExpression.rate(Duration.hours(1)),
      TimeWindow.flexible(Duration.minutes(10)),
    )
    expect(gap).toEqual({ kind: 'recurring', longestMs: HOUR + 10 * MINUTE })
  })

  it('finds a cron that fires in February only to be a year apart at most', () => {
    const gap = longestGap(ScheduleExpression.expression('cron(0 0 1 2 ? *)'))
    expect(gap).toEqual({ kind: 'recurring', longestMs: 366 * DAY })
  })

  it('knows a one-time schedule fires once, and cannot tell the gaps of L, W and # crons', () => {
    expect(longestGap(ScheduleExpression.at(new Date('2030-01-01T00:00:00Z')))).toEqual({ kind: 'once' })
    for (const text of [
      'cron(30 23 L * ? *)',
      'cron(0 9 15W * ? *)',
      'cron(0 9 ? * 2#1 *)',
      'cron(0 9 ? * 6L *)',
    ]) {
      expect(longestGap(ScheduleExpression.expression(text))).toMatchObject({ kind: 'unknown' })
    }
  })
})

const cfnLintSkip =
  spawnSync('cfn-lint', ['--version'], { stdio: 'ignore' }).status === 0
    ? undefined
    : 'cfn-lint is not installed'

describe('a template with every alarm', () => {
  it.skipIf(cfnLintSkip !== undefined)(
    `passes cfn-lint${cfnLintSkip ? ` (skipped: ${cfnLintSkip})` : ''}`,
    async () => {
      const stack = testStack()
      job(stack, {
        schedules: [
          {
            name: 'weekdays',
            expression: ScheduleExpression.cron({ minute: '0', hour: '9', weekDay: 'MON-FRI' }),
          },
        ],
        metrics: { dashboard: true },
        alarms: { missedRuns: 1 },
        maxTickAge: Duration.hours(1),
        deadLetterQueueEnabled: true,
      })
      const file = join(mkdtempSync(join(tmpdir(), 'lambda-singleton-alarms-')), 'template.json')
      writeFileSync(file, JSON.stringify(Template.fromStack(stack).toJSON()))
      // W3005: the DependsOn that CDK itself puts next to a GetAtt of the function's role.
      const { stdout } = await promisify(execFile)('cfn-lint', [
        '--format',
        'parseable',
        '--ignore-checks=W3005', // one argument: a separate one would take the file for a check id
        file,
      ]).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? 'cfn-lint failed' }))
      expect(stdout.trim()).toBe('')
    },
    120_000,
  )
})
