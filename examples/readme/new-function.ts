// A new scheduled singleton function in a stack of yours.
import { Duration, Stack, Validations } from 'aws-cdk-lib'
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions'
import * as iam from 'aws-cdk-lib/aws-iam'
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
    const parts = output.arnForObjects('parts/*')
    job.function.addToRolePolicy(
      new iam.PolicyStatement({ actions: ['s3:GetObject', 's3:PutObject'], resources: [parts] }),
    )
    // cdk-nag (AwsSolutions-IAM5) flags the prefix: acknowledged for that one resource, with why.
    const bucket = this.getLogicalId(output.node.defaultChild as s3.CfnBucket)
    Validations.of(job).acknowledge({
      id: `AwsSolutions-IAM5[Resource::<${bucket}.Arn>/parts/*]`,
      reason: 'one object per part, named at run time under parts/',
    })
  }
}
