/**
 * The stores the benchmark compares, each on its engine, with its requests counted on the wire
 * and priced at AWS list prices.
 */
import { randomUUID } from 'node:crypto'
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb'
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3'
import type { LockStore } from 'lambda-singleton'
import { DynamoDBLockStore } from 'lambda-singleton/dynamodb'
import { S3LockStore } from 'lambda-singleton/s3'
import { countRequests, type RequestCount } from '../test/support/requests.js'

export interface BenchTarget {
  readonly name: string
  readonly store: LockStore
  readonly requests: RequestCount
  /** US dollars per million requests of each operation (us-east-1 list prices, 2026). */
  readonly pricePerMillion: Readonly<Record<string, number>>
  close(): void
}

const region = process.env.AWS_REGION ?? 'us-east-1'

/** S3 Standard: PUT $0.005 and GET $0.0004 per 1,000 requests. */
export async function s3Target(endpoint: string): Promise<BenchTarget> {
  const s3 = new S3Client({ endpoint, region, forcePathStyle: true, maxAttempts: 1 })
  const bucket = `lambda-singleton-bench-${randomUUID().slice(0, 8)}`
  await s3.send(new CreateBucketCommand({ Bucket: bucket }))
  return {
    name: 'S3',
    store: new S3LockStore({ s3, bucket }),
    requests: countRequests(s3),
    pricePerMillion: { PutObject: 5, GetObject: 0.4 },
    close: () => s3.destroy(),
  }
}

/**
 * DynamoDB on demand: $0.625 per million write request units and $0.125 per million read
 * units. A lock item is under 1 KB (one write unit); the store reads strongly consistent
 * (one read unit per 4 KB).
 */
export async function dynamodbTarget(endpoint: string): Promise<BenchTarget> {
  const client = new DynamoDBClient({ endpoint, region, maxAttempts: 1 })
  const tableName = `lambda-singleton-bench-${randomUUID().slice(0, 8)}`
  await client.send(
    new CreateTableCommand({
      TableName: tableName,
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
    }),
  )
  return {
    name: 'DynamoDB',
    store: new DynamoDBLockStore({ client, tableName }),
    requests: countRequests(client),
    pricePerMillion: { PutItem: 0.625, GetItem: 0.125 },
    close: () => client.destroy(),
  }
}

/** What the requests counted so far would cost per million repetitions. */
export function costPerMillion(target: BenchTarget, counts: ReadonlyMap<string, number>): number {
  let dollars = 0
  for (const [operation, count] of counts) {
    const price = target.pricePerMillion[operation]
    if (price === undefined) throw new Error(`no price for ${target.name} ${operation}`)
    dollars += count * price
  }
  return dollars
}
