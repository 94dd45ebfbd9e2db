// One lock for a job that two stacks deploy, in two regions: the same bucket, the same lockKey.
import { Duration, Stack, type StackProps } from 'aws-cdk-lib'
import * as s3 from 'aws-cdk-lib/aws-s3'
import { ScheduleExpression } from 'aws-cdk-lib/aws-scheduler'
import type { Construct } from 'constructs'
import { LockBucket, ScheduledSingletonFunction } from 'lambda-singleton/cdk'

/** Made once, by a stack in its region: `new LockBucket(this, 'Locks', { bucketProps: { bucketName } })`. */
export const SHARED_LOCKS = { bucketName: 'acme-job-locks', region: 'eu-west-1' }

export class CompactionStack extends Stack {
  constructor(scope: Construct, id: string, props: StackProps) {
    super(scope, id, props)
    const bucket = s3.Bucket.fromBucketAttributes(this, 'SharedLocks', SHARED_LOCKS)
    new ScheduledSingletonFunction(this, 'Compaction', {
      entry: 'src/compaction.ts', // examples/readme/shared-lock-handler.ts
      lockBucket: new LockBucket(this, 'Locks', { bucket }), // grants and environment, no new bucket
      lockKey: 'compaction', // the same in every stack: one lock, locks/compaction
      schedules: [{ name: 'hourly', expression: ScheduleExpression.rate(Duration.hours(1)) }],
      functionProps: { environment: { LOCK_BUCKET_REGION: SHARED_LOCKS.region } },
    })
  }
}

// new CompactionStack(app, 'Compaction-eu', { env: { region: 'eu-west-1' } })
// new CompactionStack(app, 'Compaction-us', { env: { region: 'us-east-1' } })
