/**
 * "Add to an existing stack": a stack that already has a Lambda function and a bucket makes the
 * function a scheduled singleton. docs/cdk.md shows this file; `npm run typecheck` checks it and
 * test/infra synthesizes it.
 */
import { Duration, Stack, type StackProps } from 'aws-cdk-lib'
import * as lambda from 'aws-cdk-lib/aws-lambda'
import * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs'
import * as s3 from 'aws-cdk-lib/aws-s3'
import { ScheduleExpression } from 'aws-cdk-lib/aws-scheduler'
import type { Construct } from 'constructs'
import { LockBucket, ScheduledSingleton } from 'lambda-singleton/cdk'

export interface ReportingStackProps extends StackProps {
  /**
   * The report handler's source file.
   *
   * @default 'src/reports.ts'
   */
  readonly reportsEntry?: string
}

export class ReportingStack extends Stack {
  constructor(scope: Construct, id: string, props: ReportingStackProps = {}) {
    super(scope, id, props)

    // What the stack already had: a bucket, and a function whose handler is wrapped in
    // middy(...).use(singleton()).
    const jobsBucket = new s3.Bucket(this, 'Jobs', {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
    })
    const reports = new nodejs.NodejsFunction(this, 'Reports', {
      entry: props.reportsEntry ?? 'src/reports.ts',
      runtime: lambda.Runtime.NODEJS_24_X,
      timeout: Duration.minutes(10),
      bundling: { bundleAwsSDK: true }, // the runtime's SDK may predate S3 conditional writes
    })

    // Keep the locks under a prefix of the existing bucket. The construct adds a bucket-policy
    // statement refusing unconditional writes under `locks/`.
    const locks = new LockBucket(this, 'Locks', { bucket: jobsBucket, keyPrefix: 'locks/' })

    // Lock env vars + least-privilege grant, the schedules, a dead-letter queue, alarms.
    new ScheduledSingleton(this, 'ReportsSingleton', {
      function: reports,
      lockBucket: locks,
      schedules: [
        { name: 'hourly', expression: ScheduleExpression.rate(Duration.hours(1)) },
        { name: 'month-end', expression: ScheduleExpression.cron({ day: 'L', hour: '23', minute: '30' }) },
      ],
      retryAttempts: 5,
      maxEventAge: Duration.minutes(30),
      deadLetterQueueEnabled: true,
      alarms: {},
    })
  }
}
