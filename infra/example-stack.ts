import { fileURLToPath } from 'node:url'
import { CfnOutput, Duration, RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib'
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch'
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions'
import * as iam from 'aws-cdk-lib/aws-iam'
import type * as lambda from 'aws-cdk-lib/aws-lambda'
import type * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs'
import * as s3 from 'aws-cdk-lib/aws-s3'
import { ScheduleExpression } from 'aws-cdk-lib/aws-scheduler'
import * as sns from 'aws-cdk-lib/aws-sns'
import type { Construct } from 'constructs'
import { LockBucket } from './lock-bucket.js'
import { acknowledgeWildcardResource } from './private/nag.js'
import { ScheduledSingletonFunction } from './scheduled-singleton-function.js'

/** The example handlers, bundled from source. */
export const EXAMPLE_ENTRIES = {
  nightlyReport: fileURLToPath(new URL('../functions/nightly-report.ts', import.meta.url)),
  tenantSync: fileURLToPath(new URL('../functions/tenant-sync.ts', import.meta.url)),
} as const

/** The environment variable both example handlers read their data bucket from. */
const DATA_BUCKET_ENV = 'DATA_BUCKET'

export interface ExampleStackProps extends StackProps {
  /**
   * Tenants to sync: one tenant-sync schedule each, named after the tenant.
   *
   * @default ['acme', 'globex']
   */
  readonly tenants?: readonly string[]
}

/**
 * The deployable example: a shared lock bucket, a nightly report that skips when a run is
 * already going, and a per-tenant sync whose snapshots carry the writer's fencing token.
 */
export class ExampleStack extends Stack {
  /** Where both jobs keep their locks. */
  readonly lockBucket: LockBucket
  /** Tenant inboxes and snapshots, and the nightly reports. */
  readonly dataBucket: s3.Bucket
  /** The nightly report job. */
  readonly nightlyReport: ScheduledSingletonFunction
  /** The per-tenant sync job. */
  readonly tenantSync: ScheduledSingletonFunction
  /** Both jobs' lock metrics. */
  readonly dashboard: cloudwatch.Dashboard

  constructor(scope: Construct, id: string, props: ExampleStackProps = {}) {
    super(scope, id, {
      description: 'lambda-singleton example: scheduled Lambda functions that never overlap',
      ...props,
    })
    const tenants = props.tenants ?? ['acme', 'globex']
    // In this repository `lambda-singleton` is the package itself: bundle its TypeScript sources
    // (the `source` export condition) rather than a dist/ that a fresh clone does not have.
    const bundling: nodejs.BundlingOptions = { esbuildArgs: { '--conditions': 'lambda-singleton-source' } }

    const accessLogs = new s3.Bucket(this, 'AccessLogs', {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      encryption: s3.BucketEncryption.S3_MANAGED,
      lifecycleRules: [{ expiration: Duration.days(90) }],
      removalPolicy: RemovalPolicy.RETAIN,
    })

    this.lockBucket = new LockBucket(this, 'Locks', {
      bucketProps: { serverAccessLogsBucket: accessLogs, serverAccessLogsPrefix: 'locks/' },
    })

    this.dataBucket = new s3.Bucket(this, 'Data', {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      encryption: s3.BucketEncryption.S3_MANAGED,
      serverAccessLogsBucket: accessLogs,
      serverAccessLogsPrefix: 'data/',
      removalPolicy: RemovalPolicy.RETAIN,
    })

    const alarmTopic = new sns.Topic(this, 'Alarms', { enforceSSL: true })
    const alarms = { actions: [new actions.SnsAction(alarmTopic)] }
    // The middleware's metrics for both jobs on one dashboard; with `alarms`, alarms on missed runs,
    // runs that held the lock too long, lost leases and a paused job.
    this.dashboard = new cloudwatch.Dashboard(this, 'Dashboard')
    const metrics = { namespace: 'LambdaSingletonExample', dashboard: this.dashboard }

    this.nightlyReport = new ScheduledSingletonFunction(this, 'NightlyReport', {
      entry: EXAMPLE_ENTRIES.nightlyReport,
      lockBucket: this.lockBucket,
      lockKey: 'nightly-report', // locks/nightly-report, whatever the construct's path becomes
      schedules: [
        {
          name: 'nightly',
          expression: ScheduleExpression.cron({ minute: '0', hour: '3' }),
          description: 'Nightly report at 03:00 UTC',
        },
      ],
      timeout: Duration.minutes(10),
      deadLetterQueueEnabled: true,
      alarms,
      metrics,
      functionProps: {
        memorySize: 512,
        environment: { [DATA_BUCKET_ENV]: this.dataBucket.bucketName },
        bundling,
      },
    })
    this.grantData(this.nightlyReport.function, { read: ['tenants/*'], write: ['reports/*'] })

    this.tenantSync = new ScheduledSingletonFunction(this, 'TenantSync', {
      entry: EXAMPLE_ENTRIES.tenantSync,
      lockBucket: this.lockBucket,
      // The handler's key function locks tenant-sync/<tenant>: its role may use those keys only.
      lockKeys: ['tenant-sync/*'],
      schedules: tenants.map((tenant) => ({
        name: tenant,
        expression: ScheduleExpression.rate(Duration.minutes(15)),
        description: `Sync tenant ${tenant} every 15 minutes`,
      })),
      timeout: Duration.minutes(5),
      // A tick delivered more than 15 minutes late (a retry, a backlog) is skipped: the next is due.
      maxTickAge: Duration.minutes(15),
      deadLetterQueueEnabled: true,
      alarms,
      metrics,
      functionProps: {
        environment: { [DATA_BUCKET_ENV]: this.dataBucket.bucketName },
        bundling,
      },
    })
    this.grantData(this.tenantSync.function, { read: ['tenants/*'], write: ['tenants/*/snapshot.json'] })

    new CfnOutput(this, 'LockBucketName', { value: this.lockBucket.bucket.bucketName })
    new CfnOutput(this, 'DataBucketName', { value: this.dataBucket.bucketName })
    new CfnOutput(this, 'AlarmTopicArn', { value: alarmTopic.topicArn })
    new CfnOutput(this, 'NightlyReportFunctionName', { value: this.nightlyReport.function.functionName })
    new CfnOutput(this, 'TenantSyncFunctionName', { value: this.tenantSync.function.functionName })
  }

  /**
   * Exactly what a handler does with the data bucket: list it, read under `read`, write
   * (fenced: HEAD + conditional PUT, so read too) under `write`.
   */
  private grantData(fn: lambda.Function, patterns: { read: string[]; write: string[] }): void {
    const bucket = this.dataBucket
    // Listing also makes S3 answer 404, not 403, for a missing key, which fencedPut relies on.
    fn.addToRolePolicy(new iam.PolicyStatement({ actions: ['s3:ListBucket'], resources: [bucket.bucketArn] }))
    const readArns = [...patterns.read, ...patterns.write].map((pattern) => bucket.arnForObjects(pattern))
    const writeArns = patterns.write.map((pattern) => bucket.arnForObjects(pattern))
    fn.addToRolePolicy(new iam.PolicyStatement({ actions: ['s3:GetObject'], resources: readArns }))
    fn.addToRolePolicy(new iam.PolicyStatement({ actions: ['s3:PutObject'], resources: writeArns }))
    for (const arn of new Set(readArns)) {
      acknowledgeWildcardResource(
        fn.role ?? fn,
        arn,
        'Tenant and report objects are named at run time; the grant is limited to their prefix ' +
          'and to GetObject/PutObject.',
      )
    }
  }
}
