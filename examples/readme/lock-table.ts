// Scheduled singletons whose locks live in a DynamoDB table.
import { Duration, Stack } from 'aws-cdk-lib'
import { ScheduleExpression } from 'aws-cdk-lib/aws-scheduler'
import type { Construct } from 'constructs'
import { LockTable, ScheduledSingletonFunction } from 'lambda-singleton/cdk'

export class BillingStack extends Stack {
  constructor(scope: Construct, id: string) {
    super(scope, id)
    // On demand, point-in-time recovery, deletion protection, retained with the stack's removal.
    const locks = new LockTable(this, 'Locks')

    new ScheduledSingletonFunction(this, 'Invoices', {
      entry: 'src/invoices.ts',
      lockTable: locks, // LAMBDA_SINGLETON_TABLE, and GetItem/PutItem/UpdateItem on locks/* only
      schedules: [{ name: 'hourly', expression: ScheduleExpression.rate(Duration.hours(1)) }],
    })
  }
}
