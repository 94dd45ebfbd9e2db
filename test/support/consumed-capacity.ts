import type { AttributeValue, DynamoDBClient } from '@aws-sdk/client-dynamodb'

const BILLED = new Set(['GetItem', 'PutItem', 'UpdateItem', 'DeleteItem'])

/**
 * Hands `consumed` the request units each of `client`'s item requests consumes, as the engine
 * reckons them (`ReturnConsumedCapacity`: DynamoDB Local goes by item size, as DynamoDB does).
 * DynamoDB bills a write a unit per KB of the item and a strongly consistent read a unit per 4 KB,
 * so what a run costs is its units, not its requests. A write whose condition fails consumes its
 * units all the same, but its error does not say how many: they are reckoned from the item the
 * request carried (one at least). `undefined`: the engine answered without saying (dynalite does).
 */
export function onConsumedCapacity(
  client: DynamoDBClient,
  consumed: (operation: string, units: number | undefined) => void,
): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const operation = String(context.commandName ?? '').replace(/Command$/, '')
      if (!BILLED.has(operation)) return next(args)
      const input = { ...(args.input as Record<string, unknown>), ReturnConsumedCapacity: 'TOTAL' }
      try {
        const result = await next({ ...args, input })
        const capacity = (result.output as { ConsumedCapacity?: { CapacityUnits?: number } }).ConsumedCapacity
        consumed(operation, capacity?.CapacityUnits)
        return result
      } catch (error) {
        const item = (input as { Item?: Record<string, AttributeValue> }).Item
        consumed(operation, item ? Math.max(1, Math.ceil(itemBytes(item) / 1024)) : 1)
        throw error
      }
    },
    { step: 'initialize', priority: 'high', name: 'onConsumedCapacity' },
  )
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
