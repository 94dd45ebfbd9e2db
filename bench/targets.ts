/**
 * The stores the lock-level benchmark compares, each on its engine, with its requests counted
 * on the wire and priced by bench/prices.ts.
 */

import { DynamoDBLockStore } from 'lambda-singleton/dynamodb'
import type { LockStore } from 'lambda-singleton/extend'
import { S3LockStore } from 'lambda-singleton/s3'
import { countRequests, type RequestCount } from '../test/support/requests.js'
import type { DynamoDBEngine, S3Engine } from './engines.js'
import { DYNAMODB_PRICES, S3_PRICES } from './prices.js'

export interface BenchTarget {
  readonly name: string
  readonly store: LockStore
  readonly requests: RequestCount
  /** US dollars per million requests of each operation. */
  readonly pricePerMillion: Readonly<Record<string, number>>
  close(): void
}

export function s3Target(engine: S3Engine): BenchTarget {
  const s3 = engine.client()
  return {
    name: 'S3',
    store: new S3LockStore({ s3, bucket: engine.bucket }),
    requests: countRequests(s3),
    pricePerMillion: S3_PRICES,
    close: () => s3.destroy(),
  }
}

export function dynamodbTarget(engine: DynamoDBEngine, tableName: string): BenchTarget {
  const client = engine.client()
  return {
    name: 'DynamoDB',
    store: new DynamoDBLockStore({ client, tableName }),
    requests: countRequests(client),
    pricePerMillion: DYNAMODB_PRICES,
    close: () => client.destroy(),
  }
}
