import { Duration, type Stack } from 'aws-cdk-lib'
import { Match, Template } from 'aws-cdk-lib/assertions'
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch'
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions'
import { ScheduleExpression } from 'aws-cdk-lib/aws-scheduler'
import * as sns from 'aws-cdk-lib/aws-sns'
import { describe, expect, it } from 'vitest'
import {
  ScheduledSingletonFunction,
  type ScheduledSingletonFunctionProps,
  SingletonValidationError,
} from '../../infra/index.js'
import { LOCK_ENV } from '../../lib/config.js'
import { FIXTURE_ENTRY, nagFindings, testStack, thrown } from './support.js'

const hourly = [{ name: 'hourly', expression: ScheduleExpression.rate(Duration.hours(1)) }]

function job(stack: Stack, id: string, props: Partial<ScheduledSingletonFunctionProps> = {}) {
  return new ScheduledSingletonFunction(stack, id, { entry: FIXTURE_ENTRY, schedules: hourly, ...props })
}

const fnRef = (stack: Stack, fn: ScheduledSingletonFunction) => ({
  Ref: stack.getLogicalId(fn.function.node.defaultChild as never),
})

/** The dashboard body as CloudWatch gets it, its tokens left as they are. */
function dashboardBody(template: Template): string {
  const [dashboard] = Object.values(template.findResources('AWS::CloudWatch::Dashboard')) as Array<{
    Properties: { DashboardBody: unknown }
  }>
  return JSON.stringify(dashboard?.Properties.DashboardBody)
}

describe('metrics: the constructs turn them on and read them back', () => {
  it('are off unless asked for: no namespace for the function, no lost alarm, no dashboard', () => {
    const stack = testStack()
    const plain = job(stack, 'Job', { alarms: {} })
    const template = Template.fromStack(stack)
    const env = JSON.stringify(template.findResources('AWS::Lambda::Function'))
    expect(env).not.toContain(LOCK_ENV.metricsNamespace)
    template.resourceCountIs('AWS::CloudWatch::Alarm', 1) // the errors alarm only
    template.resourceCountIs('AWS::CloudWatch::Dashboard', 0)
    expect(plain.singleton.metrics).toBeUndefined()
  })

  it('give the function its namespace, which turns the EMF lines on', () => {
    const stack = testStack()
    job(stack, 'Job', { metrics: { namespace: 'Billing/Jobs' } })
    Template.fromStack(stack).hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ [LOCK_ENV.metricsNamespace]: 'Billing/Jobs' }) },
    })
  })

  it('with alarms, alarm on any lost lease of the function, whatever its lock keys, notifying the actions', () => {
    const stack = testStack()
    const topic = new sns.Topic(stack, 'Topic', { enforceSSL: true })
    const billing = job(stack, 'Job', {
      metrics: {},
      alarms: { actions: [new actions.SnsAction(topic)], period: Duration.minutes(1) },
    })
    const topicRef = { Ref: stack.getLogicalId(topic.node.defaultChild as never) }
    Template.fromStack(stack).hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'LambdaSingleton',
      MetricName: 'Lost',
      Dimensions: [{ Name: 'FunctionName', Value: fnRef(stack, billing) }],
      Statistic: 'Sum',
      Period: 60,
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
      EvaluationPeriods: 1,
      TreatMissingData: 'notBreaching',
      AlarmActions: [topicRef],
      OKActions: [topicRef],
    })
    expect(billing.singleton.metrics?.lostAlarm).toBeDefined()
  })

  it('draw a dashboard of runs, problems, wait and hold times when asked', () => {
    const stack = testStack()
    const billing = job(stack, 'Job', { metrics: { namespace: 'Billing', dashboard: true } })
    const template = Template.fromStack(stack)
    template.resourceCountIs('AWS::CloudWatch::Dashboard', 1)
    const body = dashboardBody(template)
    for (const metric of [
      'Acquired',
      'Held',
      'Duplicate',
      'Replaced',
      'Lost',
      'ReleaseFailed',
      'WaitMs',
      'HeldMs',
    ]) {
      expect(body).toContain(`\\"Billing\\",\\"${metric}\\",\\"FunctionName\\"`)
    }
    expect(body).toContain(stack.getLogicalId(billing.function.node.defaultChild as never))
    expect(body).toContain('p90')
  })

  it('add their widgets to a dashboard of yours, one for many functions', () => {
    const stack = testStack()
    const dashboard = new cloudwatch.Dashboard(stack, 'Ops')
    const a = job(stack, 'A', { metrics: { dashboard } })
    const b = job(stack, 'B', { metrics: { dashboard } })
    const template = Template.fromStack(stack)
    template.resourceCountIs('AWS::CloudWatch::Dashboard', 1)
    const body = dashboardBody(template)
    for (const fn of [a, b])
      expect(body).toContain(stack.getLogicalId(fn.function.node.defaultChild as never))
    expect(a.singleton.metrics?.dashboard).toBe(dashboard)
  })

  it('pass cdk-nag with alarms and a dashboard', () => {
    const stack = testStack()
    job(stack, 'Job', { metrics: { dashboard: true }, alarms: {} })
    expect(nagFindings(stack).filter((f) => !f.path.includes('LockBucket/Bucket'))).toEqual([])
  })

  it.each(['', 'AWS/Lambda', 'jobs{1}'])('refuse the namespace %j at synth', (namespace) => {
    const error = thrown(() => job(testStack(), 'Job', { metrics: { namespace } }))
    expect(error).toBeInstanceOf(SingletonValidationError)
    expect(error.message).toMatch(/metrics.namespace/)
  })
})
