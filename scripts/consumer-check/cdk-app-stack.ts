// The consumer check's stack: a scheduled singleton function from `lambda-singleton/cdk`, as
// the README and docs/cdk.md show it. The same file serves the ESM project and the `cdk init` (CommonJS) one,
// which replaces its generated lib/cdk-app-stack.ts with it.
import { ScheduleExpression } from 'aws-cdk-lib/aws-scheduler'
import * as cdk from 'aws-cdk-lib/core'
import type { Construct } from 'constructs'
import { LockBucket, ScheduledSingletonFunction } from 'lambda-singleton/cdk'

export class CdkAppStack extends cdk.Stack {
  constructor(scope: Construct, id: string, props?: cdk.StackProps) {
    super(scope, id, props)
    const locks = new LockBucket(this, 'Locks')
    new ScheduledSingletonFunction(this, 'Nightly', {
      entry: 'lambda/handler.ts',
      lockBucket: locks,
      timeout: cdk.Duration.minutes(5),
      schedules: [{ name: 'nightly', expression: ScheduleExpression.cron({ hour: '3', minute: '0' }) }],
    })
  }
}
