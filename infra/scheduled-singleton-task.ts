import { Duration, RemovalPolicy } from 'aws-cdk-lib'
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch'
import * as ec2 from 'aws-cdk-lib/aws-ec2'
import * as ecs from 'aws-cdk-lib/aws-ecs'
import type * as iam from 'aws-cdk-lib/aws-iam'
import * as logs from 'aws-cdk-lib/aws-logs'
import type * as scheduler from 'aws-cdk-lib/aws-scheduler'
import * as targets from 'aws-cdk-lib/aws-scheduler-targets'
import type * as sqs from 'aws-cdk-lib/aws-sqs'
import { Construct } from 'constructs'
import {
  DEFAULT_KILL_AFTER_MS,
  DEFAULT_METRICS_NAMESPACE,
  MAX_DURATION_MS,
  MetricDimension,
  namespaceProblem,
  pauseAfterFailuresProblem,
  SingletonMetric,
} from '../lib/config.js'
import { LockOptionsError } from '../lib/core/errors.js'
import {
  DEFAULT_CLOCK_SKEW_MARGIN_MS,
  defaultHeartbeatMs,
  minTtlForDefaultHeartbeat,
  validateTiming,
} from '../lib/core/timing.js'
import { Outcome } from '../lib/lifecycle/outcome.js'
import { ExecMessage, LogField, LogLevel, logPath, OutcomeField } from '../lib/log-contract.js'
import { SingletonValidationError } from './errors.js'
import type { ILockStore } from './lock-store.js'
import { deadLetterAlarm, JobSchedules } from './private/job-schedules.js'
import { validateLockKey } from './private/lock-key.js'
import { chooseLockStore } from './private/lock-store-choice.js'
import type { ScheduledJobOptions } from './scheduled-job.js'
import {
  createMetricAlarms,
  type SingletonAlarmProps,
  type SingletonMetricSource,
} from './singleton-alarms.js'

/** Props of `ScheduledSingletonTask`: a container job on Fargate, at most one at a time. */
export interface ScheduledSingletonTaskProps extends ScheduledJobOptions {
  /** The job's image: it must have the `lambda-singleton` package (see `execCommand`). */
  readonly image: ecs.ContainerImage
  /** The job's command, run by `lambda-singleton exec` while it holds the lock, e.g. `['node', 'job.js']`. */
  readonly command: readonly string[]
  /** How to start `lambda-singleton` in the image. @default ['npx', '--no', 'lambda-singleton'] */
  readonly execCommand?: readonly string[]
  /**
   * The lease, renewed every third of it: a crashed task frees the lock this long after. A third
   * must fit above exec's 2 s clock-skew margin: at least 3001 milliseconds. @default 2 minutes
   */
  readonly ttl?: Duration
  /** From SIGTERM to SIGKILL when the lease is lost (`--kill-after`). @default 10 seconds */
  readonly killAfter?: Duration
  /**
   * Pause the job after this many runs in a row whose command exited non-zero, until
   * `lambda-singleton resume` (`--pause-after-failures`): its ticks then start tasks that exit 0
   * at once, and the paused alarm fires. @default never
   */
  readonly pauseAfterFailures?: number
  /** The cluster to run in. @default a new cluster, in `vpc` */
  readonly cluster?: ecs.ICluster
  /**
   * The VPC of a new cluster. @default a new VPC of public subnets only, no NAT gateway, with
   * flow logs; the task gets a public IP to pull its image and reach the store
   */
  readonly vpc?: ec2.IVpc
  /** The subnets of the task. @default the cluster's private subnets with egress; public ones in a new VPC */
  readonly vpcSubnets?: ec2.SubnetSelection
  /** @default true in a new VPC, otherwise false */
  readonly assignPublicIp?: boolean
  /** @default a new security group with no inbound rule */
  readonly securityGroups?: ec2.ISecurityGroup[]
  /** @default 256 (.25 vCPU) */
  readonly cpu?: number
  /** @default 512 */
  readonly memoryLimitMiB?: number
  /** More settings of the job's container (environment, secrets, …). @default none */
  readonly containerProps?: Omit<ecs.ContainerDefinitionOptions, 'image' | 'command' | 'logging'>
  /** The namespace of the metrics read from the logs. @default 'LambdaSingleton' */
  readonly metricNamespace?: string
}

/** The container's name in the task definition. */
const CONTAINER = 'job'

/**
 * A scheduled container job that runs at most once at a time: a Fargate task definition whose
 * command is wrapped by `lambda-singleton exec`, EventBridge Scheduler schedules that run it,
 * the task role granted its one lock key only, its logs, and alarms on failed runs and lost
 * leases read from exec's log lines.
 */
export class ScheduledSingletonTask extends Construct {
  /** The cluster the task runs in (given or created). */
  readonly cluster: ecs.ICluster
  /** The task definition: one container, `job`, whose command `exec` wraps. */
  readonly taskDefinition: ecs.FargateTaskDefinition
  /** The job's container. */
  readonly container: ecs.ContainerDefinition
  /** Where the container's output goes, exec's JSON lines included (one month). */
  readonly logGroup: logs.LogGroup
  /** Where the lock lives: the `lockTable`, the `lockBucket`, or a new `LockBucket`. */
  readonly lockStore: ILockStore
  /** The lock key below the store's prefix (`lockKey`, or the construct path). */
  readonly lockKey: string
  /** The whole key exec locks: the store's prefix and `lockKey`. */
  readonly fullLockKey: string
  /** One schedule per entry of `schedules`, in the same order. */
  readonly schedules: readonly scheduler.Schedule[]
  /** The role Scheduler assumes to run the task: `ecs:RunTask` and `iam:PassRole` of its roles. */
  readonly scheduleRole: iam.Role
  /** Runs whose command exited non-zero or that could not use the lock (from the logs). */
  readonly failedRuns: cloudwatch.Metric
  /** Leases lost while the command ran (from the logs). */
  readonly lostLeases: cloudwatch.Metric
  /** The queue for ticks Scheduler could not start, if any. */
  readonly deadLetterQueue: sqs.IQueue | undefined
  /** Alarm on failed runs, when `alarms` is set. */
  readonly failedRunsAlarm: cloudwatch.Alarm | undefined
  /** Alarm on leases lost mid-run, when `alarms` is set. */
  readonly lostLeaseAlarm: cloudwatch.Alarm | undefined
  /** Alarm on ticks waiting in the dead-letter queue, when `alarms` is set and there is a queue. */
  readonly deadLetterAlarm: cloudwatch.Alarm | undefined
  /** Alarm when no run completed within `alarms.missedRuns` schedule intervals, when made. */
  readonly missedRunAlarm: cloudwatch.Alarm | undefined
  /** Alarm when a run held the lock longer than `alarms.maxRunTime`, when made. */
  readonly runTooLongAlarm: cloudwatch.Alarm | undefined
  /** Alarm while the job is paused, when made. */
  readonly pausedAlarm: cloudwatch.Alarm | undefined
  /** Every alarm above that was made, in that order. */
  readonly alarms: readonly cloudwatch.Alarm[]

  constructor(scope: Construct, id: string, props: ScheduledSingletonTaskProps) {
    super(scope, id)
    if (props.command.length === 0) throw new SingletonValidationError('command must not be empty', this)
    const { pauseAfterFailures } = props
    // exec's rule: what it would refuse at every run is refused at synth.
    const pauseProblem =
      pauseAfterFailures === undefined ? undefined : pauseAfterFailuresProblem(pauseAfterFailures)
    if (pauseProblem) {
      throw new SingletonValidationError(
        `pauseAfterFailures ${pauseProblem}, got ${pauseAfterFailures}`,
        this,
      )
    }
    for (const [name, duration] of [
      ['ttl', props.ttl],
      ['killAfter', props.killAfter],
    ] as const) {
      if (duration && !duration.isUnresolved() && execMs(duration) > MAX_DURATION_MS) {
        throw new SingletonValidationError(
          `${name} must be at most a week, as exec takes, got ${duration}`,
          this,
        )
      }
    }
    if (props.ttl && !props.ttl.isUnresolved()) validateExecTtl(this, props.ttl)
    this.lockStore = chooseLockStore(this, props).store
    this.lockKey = props.lockKey ?? this.node.path
    validateLockKey(this, this.lockKey, this.lockStore.keyPrefix)
    this.fullLockKey = `${this.lockStore.keyPrefix}${this.lockKey}`

    const network = this.network(props)
    this.cluster = network.cluster
    this.logGroup = new logs.LogGroup(this, 'Logs', {
      retention: logs.RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.RETAIN,
    })
    this.taskDefinition = new ecs.FargateTaskDefinition(this, 'TaskDefinition', {
      cpu: props.cpu ?? 256,
      memoryLimitMiB: props.memoryLimitMiB ?? 512,
    })
    this.container = this.taskDefinition.addContainer(CONTAINER, {
      ...props.containerProps,
      image: props.image,
      command: [...this.execArgs(props), '--', ...props.command],
      logging: ecs.LogDrivers.awsLogs({ logGroup: this.logGroup, streamPrefix: 'job' }),
    })
    this.lockStore.grantKey(this.taskDefinition.taskRole, this.lockKey)

    const jobSchedules = new JobSchedules(
      this,
      props,
      'Lets EventBridge Scheduler run a singleton task',
      (delivery) =>
        new targets.EcsRunFargateTask(this.cluster, {
          ...delivery,
          taskDefinition: this.taskDefinition,
          vpcSubnets: network.subnets,
          assignPublicIp: network.assignPublicIp,
          securityGroups: network.securityGroups,
        }),
    )
    this.deadLetterQueue = jobSchedules.deadLetterQueue
    this.scheduleRole = jobSchedules.role
    this.schedules = jobSchedules.schedules

    const namespace = props.metricNamespace ?? DEFAULT_METRICS_NAMESPACE
    const namespaceIssue = namespaceProblem(namespace)
    if (namespaceIssue) {
      throw new SingletonValidationError(
        `metricNamespace ${namespaceIssue}; got ${JSON.stringify(namespace)}`,
        this,
      )
    }
    this.failedRuns = this.logMetric('FailedRuns', namespace, FAILED_RUN_PATTERN)
    // The function's metric of the same fact has this name too (SingletonMetric.Lost).
    this.lostLeases = this.logMetric(SingletonMetric.Lost, namespace, LOST_LEASE_PATTERN)
    const made = props.alarms ? this.createAlarms(props, props.alarms, namespace) : undefined
    this.failedRunsAlarm = made?.failedRuns
    this.lostLeaseAlarm = made?.lostLease
    this.deadLetterAlarm = made?.deadLetter
    this.missedRunAlarm = made?.missedRun
    this.runTooLongAlarm = made?.runTooLong
    this.pausedAlarm = made?.paused
    this.alarms = [
      this.failedRunsAlarm,
      this.lostLeaseAlarm,
      this.deadLetterAlarm,
      this.missedRunAlarm,
      this.runTooLongAlarm,
      this.pausedAlarm,
    ].filter((alarm) => alarm !== undefined)
  }

  /** `lambda-singleton exec` and its store options, before `--`. */
  private execArgs(props: ScheduledSingletonTaskProps): string[] {
    const storeArgs = this.lockStore.execOptions()
    // Whole seconds read best in the task definition; exec takes milliseconds for the rest.
    const seconds = (duration: Duration) => {
      const ms = execMs(duration)
      return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`
    }
    return [
      ...(props.execCommand ?? ['npx', '--no', 'lambda-singleton']),
      'exec',
      ...storeArgs,
      '--key',
      this.fullLockKey,
      '--ttl',
      seconds(props.ttl ?? Duration.minutes(2)),
      '--kill-after',
      seconds(props.killAfter ?? Duration.millis(DEFAULT_KILL_AFTER_MS)),
      ...(props.pauseAfterFailures === undefined
        ? []
        : ['--pause-after-failures', String(props.pauseAfterFailures)]),
      '--json', // errors as JSON lines, which the failed-runs metric reads
    ]
  }

  private network(props: ScheduledSingletonTaskProps) {
    if (props.cluster) {
      return {
        cluster: props.cluster,
        subnets: props.vpcSubnets,
        assignPublicIp: props.assignPublicIp,
        securityGroups: props.securityGroups ?? [this.securityGroup(props.cluster.vpc)],
      }
    }
    const vpc = props.vpc ?? this.createVpc()
    const cluster = new ecs.Cluster(this, 'Cluster', {
      vpc,
      containerInsightsV2: ecs.ContainerInsights.ENABLED,
    })
    return {
      cluster,
      subnets: props.vpcSubnets ?? (props.vpc ? undefined : { subnetType: ec2.SubnetType.PUBLIC }),
      assignPublicIp: props.assignPublicIp ?? (props.vpc ? undefined : true),
      securityGroups: props.securityGroups ?? [this.securityGroup(vpc)],
    }
  }

  private createVpc(): ec2.Vpc {
    const vpc = new ec2.Vpc(this, 'Vpc', {
      maxAzs: 2,
      natGateways: 0,
      subnetConfiguration: [{ name: 'public', subnetType: ec2.SubnetType.PUBLIC }],
    })
    vpc.addFlowLog('FlowLogs')
    return vpc
  }

  private securityGroup(vpc: ec2.IVpc): ec2.SecurityGroup {
    return new ec2.SecurityGroup(this, 'SecurityGroup', {
      vpc,
      description: 'A singleton task: no inbound traffic',
      allowAllOutbound: true,
    })
  }

  private logMetric(
    name: string,
    namespace: string,
    pattern: logs.IFilterPattern,
    value = '1',
  ): cloudwatch.Metric {
    const filter = new logs.MetricFilter(this, `${name}Filter`, {
      logGroup: this.logGroup,
      filterPattern: pattern,
      metricNamespace: namespace,
      metricName: name,
      metricValue: value,
      dimensions: { [MetricDimension.LockKey]: logPath(LogField.key) },
    })
    return filter.metric({
      statistic: cloudwatch.Stats.SUM,
      dimensionsMap: { [MetricDimension.LockKey]: this.fullLockKey },
    })
  }

  /**
   * The lifecycle's metrics the schedule alarms read, from exec's log lines (a task writes no
   * EMF): each metric filter is made when an alarm first asks for it.
   */
  private lifecycleMetrics(namespace: string): SingletonMetricSource {
    const sources: Partial<Record<SingletonMetric, readonly [logs.IFilterPattern, string]>> = {
      [SingletonMetric.Completed]: [COMPLETED_RUN_PATTERN, '1'],
      [SingletonMetric.HeldMs]: [RELEASED_PATTERN, logPath(OutcomeField.heldMs)],
      [SingletonMetric.Paused]: [PAUSED_PATTERN, '1'],
    }
    const made = new Map<SingletonMetric, cloudwatch.Metric>()
    return {
      metric: (name, props = {}) => {
        const source = sources[name]
        if (!source) throw new SingletonValidationError(`a singleton task has no ${name} metric`, this)
        const metric = made.get(name) ?? this.logMetric(name, namespace, source[0], source[1])
        made.set(name, metric)
        return metric.with(props)
      },
    }
  }

  private createAlarms(
    taskProps: ScheduledSingletonTaskProps,
    props: SingletonAlarmProps,
    namespace: string,
  ) {
    const deadLetterQueue = this.deadLetterQueue
    const period = props.period ?? Duration.minutes(5)
    // A task has no timeout to derive a run-too-long threshold from: only when one is given.
    const scheduleAlarms = createMetricAlarms(
      this,
      { ...props, maxRunTime: props.maxRunTime ?? false },
      { metrics: this.lifecycleMetrics(namespace), schedules: taskProps.schedules, timeout: undefined },
    )
    const alarm = (alarmId: string, description: string, metric: cloudwatch.IMetric, threshold = 1) =>
      new cloudwatch.Alarm(this, alarmId, {
        alarmDescription: description,
        metric,
        threshold,
        evaluationPeriods: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      })
    const failedRuns = alarm(
      'FailedRunsAlarm',
      'A singleton task failed: its command exited non-zero, or exec could not use the lock',
      this.failedRuns.with({ period }),
      props.errorThreshold ?? 1,
    )
    const lostLease = alarm(
      'LostLeaseAlarm',
      'A singleton task lost its lease while running; it was stopped',
      this.lostLeases.with({ period }),
    )
    const deadLetter =
      deadLetterQueue &&
      deadLetterAlarm(
        this,
        deadLetterQueue,
        period,
        'EventBridge Scheduler could not start a tick: it is in the dead-letter queue',
      )
    for (const each of [failedRuns, lostLease, deadLetter]) {
      each?.addAlarmAction(...(props.actions ?? []))
      each?.addOkAction(...(props.actions ?? []))
    }
    // createMetricAlarms set their actions already.
    return { failedRuns, lostLease, deadLetter, ...scheduleAlarms }
  }
}

/**
 * A duration as exec counts it: whole milliseconds (it rounds what it parses). CDK's own
 * conversion throws on a fraction, which no exec option needs to refuse.
 */
function execMs(duration: Duration): number {
  return Math.round(duration.toMilliseconds({ integral: false }))
}

/**
 * Refuses a `ttl` that exec refuses at every run, by the runtime's own timing rule as exec applies
 * it (its lifecycle's default heartbeat, a third of the ttl, and the default clock-skew margin):
 * exec has no option for either, so the only fix is a longer ttl.
 */
function validateExecTtl(scope: Construct, ttl: Duration): void {
  const ttlMs = execMs(ttl)
  try {
    validateTiming({ ttlMs, heartbeatMs: defaultHeartbeatMs(ttlMs), heartbeatIsDefault: true }, 'exec')
  } catch (error) {
    if (!(error instanceof LockOptionsError)) throw error
    const shortest = minTtlForDefaultHeartbeat(DEFAULT_CLOCK_SKEW_MARGIN_MS)
    throw new SingletonValidationError(
      `ttl ${ttl} is one exec refuses at every run: the lease is renewed every third of it, which ` +
        `must fit above the ${DEFAULT_CLOCK_SKEW_MARGIN_MS} ms clock-skew margin; give at least ` +
        `${shortest} milliseconds`,
      scope,
    )
  }
}

/**
 * exec's line when the command ends with a non-zero status, the lifecycle's when the lock could
 * not be used (a failed heartbeat that is retried is a warning, not counted), and exec's own
 * error (`--json`, or a command that cannot start) when it could not run it at all. The names
 * are lib/log-contract.ts's, which exec writes with.
 */
const FAILED_RUN_PATTERN = logs.FilterPattern.any(
  logs.FilterPattern.all(
    logs.FilterPattern.stringValue(logPath(LogField.message), '=', ExecMessage.CommandExited),
    logs.FilterPattern.numberValue(logPath(LogField.status), '!=', 0),
  ),
  logs.FilterPattern.all(
    logs.FilterPattern.stringValue(logPath(LogField.level), '=', LogLevel.Error),
    logs.FilterPattern.stringValue(logPath(OutcomeField.outcome), '=', Outcome.Error),
  ),
  logs.FilterPattern.numberValue(logPath(LogField.error, LogField.exitCode), '>', 0),
)
/** The lifecycle's line for a release. */
const RELEASED_PATTERN = logs.FilterPattern.stringValue(logPath(OutcomeField.outcome), '=', Outcome.Released)
/** The release of a run whose command exited 0: what the missed-run alarm counts. */
const COMPLETED_RUN_PATTERN = logs.FilterPattern.all(
  RELEASED_PATTERN,
  logs.FilterPattern.booleanValue(logPath(OutcomeField.completed), true),
)
/** The lifecycle's line for a tick skipped because the job is paused. */
const PAUSED_PATTERN = logs.FilterPattern.stringValue(logPath(OutcomeField.outcome), '=', Outcome.Paused)
/** The lifecycle's line for a lease lost mid-run. */
const LOST_LEASE_PATTERN = logs.FilterPattern.stringValue(logPath(OutcomeField.outcome), '=', Outcome.Lost)
