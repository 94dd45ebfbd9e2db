/**
 * DynamoDB bills a request by the size of the item it touches, not per request: a lock record
 * that carries the last runs (`history`) is several KB, so counting one unit per request would
 * understate what a run costs. This counts the units the engine reports, by operation
 * (test/support/consumed-capacity.ts), for bench/prices.ts to price.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb'
import { onConsumedCapacity } from '../../test/support/consumed-capacity.js'
import type { RequestCounter } from './contender.js'

/** Counts the request units `client`'s requests consume, by operation. */
export function countDynamoDBUnits(client: DynamoDBClient): RequestCounter {
  const byOperation = new Map<string, number>()
  onConsumedCapacity(client, (operation, units) =>
    byOperation.set(operation, (byOperation.get(operation) ?? 0) + (units ?? 1)),
  )
  return { byOperation, reset: () => byOperation.clear() }
}
