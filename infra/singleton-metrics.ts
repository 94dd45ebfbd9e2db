import { Duration } from 'aws-cdk-lib'
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch'
import type * as lambda from 'aws-cdk-lib/aws-lambda'
import { Construct } from 'constructs'
import {
  DEFAULT_METRICS_NAMESPACE,
  LOCK_ENV,
  MetricDimension,
  namespaceProblem,
  SingletonMetric,
} from '../lib/config.js'
import { SingletonValidationError } from './errors.js'

/** The lifecycle's CloudWatch metrics for a singleton function (opt-in). */
export interface SingletonMetricsProps {
  /**
   * The CloudWatch namespace the function writes its metrics to (given to it as
   * `LAMBDA_SINGLETON_METRICS_NAMESPACE`, which turns them on). Share one with Powertools
   * Metrics if you like: the lines have the same shape.
   *
   * @default 'LambdaSingleton'
   */
  readonly namespace?: string

  /**
   * A CloudWatch dashboard of the metrics: `true` for one of the function's own, or a dashboard
   * of yours to add the widgets to (one dashboard for many functions).
   *
   * @default no dashboard
   */
  readonly dashboard?: boolean | cloudwatch.Dashboard
}

/** How `SingletonMetrics` is wired to the function and its alarms. */
export interface SingletonMetricsWiring extends SingletonMetricsProps {
  readonly function: lambda.Function
  /** Alarm on a lost lease, with these actions; `undefined`: no alarm. */
  readonly alarm?: { readonly actions: readonly cloudwatch.IAlarmAction[]; readonly period: Duration }
}

/**
 * Turns on the lifecycle's Embedded Metric Format lines for one function, and reads them back:
 * `metric()` for any of them (by function name, whatever lock keys it uses), an alarm on lost
 * leases, and a dashboard.
 */
export class SingletonMetrics extends Construct {
  /** The namespace the function writes to. */
  readonly namespace: string
  /** Alarm when any lease was lost (`Lost` > 0), when the alarms are on. */
  readonly lostAlarm: cloudwatch.Alarm | undefined
  /** The dashboard the widgets were added to, if any. */
  readonly dashboard: cloudwatch.Dashboard | undefined
  readonly #function: lambda.Function

  constructor(scope: Construct, id: string, props: SingletonMetricsWiring) {
    super(scope, id)
    this.namespace = props.namespace ?? DEFAULT_METRICS_NAMESPACE
    const problem = namespaceProblem(this.namespace)
    if (problem) {
      throw new SingletonValidationError(
        `metrics.namespace ${JSON.stringify(this.namespace)} ${problem}`,
        this,
      )
    }
    this.#function = props.function
    props.function.addEnvironment(LOCK_ENV.metricsNamespace, this.namespace)
    this.lostAlarm = props.alarm && this.#lostAlarm(props.alarm.actions, props.alarm.period)
    this.dashboard = props.dashboard ? this.#dashboard(props.dashboard) : undefined
  }

  /** One of the function's lifecycle metrics, over all its lock keys. */
  metric(name: SingletonMetric, props: cloudwatch.MetricOptions = {}): cloudwatch.Metric {
    const isTime = name === SingletonMetric.WaitMs || name === SingletonMetric.HeldMs
    return new cloudwatch.Metric({
      namespace: this.namespace,
      metricName: name,
      dimensionsMap: { [MetricDimension.FunctionName]: this.#function.functionName },
      statistic: isTime ? cloudwatch.Stats.p(90) : cloudwatch.Stats.SUM,
      period: Duration.minutes(5),
      ...props,
    })
  }

  #lostAlarm(actions: readonly cloudwatch.IAlarmAction[], period: Duration): cloudwatch.Alarm {
    const alarm = new cloudwatch.Alarm(this, 'LostAlarm', {
      alarmDescription:
        'A singleton lease was lost while its run went on: two runs may have overlapped, and only ' +
        'fenced writes were safe. Look for "LEASE LOST" in the function logs.',
      metric: this.metric(SingletonMetric.Lost, { period, statistic: cloudwatch.Stats.SUM }),
      threshold: 0,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    })
    alarm.addAlarmAction(...actions)
    alarm.addOkAction(...actions)
    return alarm
  }

  #dashboard(given: true | cloudwatch.Dashboard): cloudwatch.Dashboard {
    const dashboard = given === true ? new cloudwatch.Dashboard(this, 'Dashboard') : given
    const {
      Acquired,
      Completed,
      Held,
      Duplicate,
      Late,
      Paused,
      Replaced,
      Lost,
      ReleaseFailed,
      WaitMs,
      HeldMs,
    } = SingletonMetric
    const counts = (names: SingletonMetric[]) => names.map((name) => this.metric(name, { label: name }))
    const times = (name: SingletonMetric) =>
      (['p50', 'p90', 'Maximum'] as const).map((statistic) =>
        this.metric(name, { statistic, label: `${name} ${statistic}` }),
      )
    const title = (what: string) => `${this.#function.node.path}: ${what}`
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: title('runs'),
        left: counts([Acquired, Completed, Held, Duplicate, Late, Paused, Replaced]),
      }),
      new cloudwatch.GraphWidget({ title: title('problems'), left: counts([Lost, ReleaseFailed]) }),
      new cloudwatch.GraphWidget({ title: title('wait for the lock (ms)'), left: times(WaitMs) }),
      new cloudwatch.GraphWidget({ title: title('lock held (ms)'), left: times(HeldMs) }),
    )
    return dashboard
  }
}
