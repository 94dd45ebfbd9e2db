/**
 * DynamoDB bills a request by the size of the item it touches, not per request: a write unit per
 * KB written (a conditional write whose condition fails included), a strongly consistent read
 * unit per 4 KB (an eventually consistent one costs half). A lock record that carries the last
 * runs (`history`) is several KB, so counting one unit per request would understate what a run
 * costs. This asks the engine (`ReturnConsumedCapacity`, which DynamoDB Local computes by size
 * as DynamoDB does) and counts the units by operation, for bench/prices.ts to price.
 */
import type { AttributeValue, DynamoDBClient } from '@aws-sdk/client-dynamodb'
import type { RequestCounter } from './contender.js'

const BILLED = new Set(['GetItem', 'PutItem', 'UpdateItem', 'DeleteItem'])

/** Counts the request units `client`'s requests consume, by operation. */
export function countDynamoDBUnits(client: DynamoDBClient): RequestCounter {
  const byOperation = new Map<string, number>()
  const add = (name: string, units: number) => byOperation.set(name, (byOperation.get(name) ?? 0) + units)
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const name = String(context.commandName ?? '').replace(/Command$/, '')
      if (!BILLED.has(name)) return next(args)
      const input = { ...(args.input as Record<string, unknown>), ReturnConsumedCapacity: 'TOTAL' }
      try {
        const result = await next({ ...args, input })
        const consumed = (result.output as { ConsumedCapacity?: { CapacityUnits?: number } }).ConsumedCapacity
        add(name, consumed?.CapacityUnits ?? 1)
        return result
      } catch (error) {
        // A failed condition consumes the write's units all the same; the error does not say how
        // many, so they are reckoned from the item the request carried (one at least).
        const item = (input as { Item?: Record<string, AttributeValue> }).Item
        add(name, item ? Math.max(1, Math.ceil(itemBytes(item) / 1024)) : 1)
        throw error
      }
    },
    { step: 'initialize', priority: 'high', name: 'countDynamoDBUnits' },
  )
  return { byOperation, reset: () => byOperation.clear() }
}

/** An item's size as DynamoDB reckons it (names and values; numbers about a byte per two digits). */
export function itemBytes(item: Record<string, AttributeValue>): number {
  let bytes = 0
  for (const [name, value] of Object.entries(item)) bytes += Buffer.byteLength(name) + valueBytes(value)
  return bytes
}

function valueBytes(value: AttributeValue): number {
  if (value.S !== undefined) return Buffer.byteLength(value.S)
  if (value.N !== undefined) return Math.ceil(value.N.replace(/[^0-9]/g, '').length / 2) + 1
  if (value.B !== undefined) return value.B.byteLength
  if (value.L !== undefined) return 3 + value.L.reduce((sum, element) => sum + 1 + valueBytes(element), 0)
  if (value.M !== undefined) return 3 + Object.keys(value.M).length + itemBytes(value.M)
  return 1
}
