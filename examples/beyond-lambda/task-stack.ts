// A container job that outgrew Lambda: a scheduled Fargate task, at most one at a time.
import { Duration, Stack } from 'aws-cdk-lib'
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions'
import * as ecs from 'aws-cdk-lib/aws-ecs'
import { ScheduleExpression } from 'aws-cdk-lib/aws-scheduler'
import * as sns from 'aws-cdk-lib/aws-sns'
import type { Construct } from 'constructs'
import { LockTable, ScheduledSingletonTask } from 'lambda-singleton/cdk'

export class RebuildStack extends Stack {
  constructor(scope: Construct, id: string) {
    super(scope, id)
    const topic = new sns.Topic(this, 'Alarms', { enforceSSL: true })
    new ScheduledSingletonTask(this, 'RebuildIndex', {
      // An image with the job and the lambda-singleton package in it (see "A container image");
      // ContainerImage.fromAsset('job') builds it from a directory of yours at deploy time.
      image: ecs.ContainerImage.fromRegistry('registry.example.com/rebuild-index:1.4.2'),
      command: ['node', 'rebuild.js'], // run as: npx --no lambda-singleton exec ... -- node rebuild.js
      lockTable: new LockTable(this, 'Locks'), // or lockBucket; by default a new LockBucket
      lockKey: 'rebuild-index', // locks/rebuild-index: the task role may use this one item only
      ttl: Duration.minutes(2), // at least 3001 ms; renewed every 40 s; a crashed task frees the lock 2 min after
      schedules: [{ name: 'every-15-min', expression: ScheduleExpression.rate(Duration.minutes(15)) }],
      cpu: 1024,
      memoryLimitMiB: 4096,
      alarms: { actions: [new SnsAction(topic)] }, // failed runs, lost leases
    })
  }
}
