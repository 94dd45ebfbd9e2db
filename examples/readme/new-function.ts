// A new scheduled singleton function in a stack of yours.
import { Duration, Stack } from 'aws-cdk-lib'
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions'
import * as s3 from 'aws-cdk-lib/aws-s3'
import { ScheduleExpression } from 'aws-cdk-lib/aws-scheduler'
import * as sns from 'aws-cdk-lib/aws-sns'
import type { Construct } from 'constructs'
import { ScheduledSingletonFunction } from 'lambda-singleton/cdk'

export class JobsStack extends Stack {
  constructor(scope: Construct, id: string) {
    super(scope, id)
    const topic = new sns.Topic(this, 'Alarms', { enforceSSL: true })
    const output = new s3.Bucket(this, 'Output', {
      enforceSSL: true,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
    })

    const job = new ScheduledSingletonFunction(this, 'NightlyReport', {
      entry: 'src/nightly-report.ts',
      timeout: Duration.minutes(10), // at most 15; the lease covers the whole invocation
      schedules: [{ name: 'nightly', expression: ScheduleExpression.cron({ hour: '3', minute: '0' }) }],
      deadLetterQueueEnabled: true,
      alarms: { actions: [new SnsAction(topic)] }, // failed runs, undelivered ticks, lost leases
      metrics: { dashboard: true }, // the lock's CloudWatch metrics, and a dashboard of them
      lockKey: 'nightly-report', // locks/nightly-report; by default the construct path, JobsStack/NightlyReport
      functionProps: { memorySize: 512, environment: { STAGE: 'prod', OUTPUT_BUCKET: output.bucketName } },
    })
    // The construct grants the function's own lock only: its output is yours to grant.
    // fencedPut sends a HEAD (s3:GetObject) and a conditional PUT (s3:PutObject).
    output.grantRead(job.function, 'parts/*')
    output.grantPut(job.function, 'parts/*')
  }
}
