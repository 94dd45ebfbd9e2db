import { Duration } from 'aws-cdk-lib'
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch'
import type * as lambda from 'aws-cdk-lib/aws-lambda'
import type * as sqs from 'aws-cdk-lib/aws-sqs'
import type { Construct } from 'constructs'
import { SingletonValidationError } from './errors.js'

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
   * The period the alarms evaluate.
   *
   * @default Duration.minutes(5)
   */
  readonly period?: Duration
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
  const deadLetter = deadLetterQueue
    ? new cloudwatch.Alarm(scope, 'DeadLetterAlarm', {
        alarmDescription: 'EventBridge Scheduler could not deliver a tick: it is in the dead-letter queue',
        metric: deadLetterQueue.metricApproximateNumberOfMessagesVisible({
          period,
          statistic: cloudwatch.Stats.MAXIMUM,
        }),
        threshold: 1,
        evaluationPeriods: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      })
    : undefined
  for (const alarm of [errors, deadLetter]) {
    if (!alarm) continue
    alarm.addAlarmAction(...(props.actions ?? []))
    alarm.addOkAction(...(props.actions ?? []))
  }
  return { errors, deadLetter, period }
}
