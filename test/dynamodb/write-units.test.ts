import type { DynamoDBClient } from '@aws-sdk/client-dynamodb'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DynamoDBLockStore } from '../../lib/dynamodb/index.js'
import { withSingleton } from '../../lib/index.js'
import { onConsumedCapacity } from '../support/consumed-capacity.js'
import { freshTable, testDynamoDBClient } from '../support/dynamodb.js'
import { lambdaContext, schedulerEvent } from '../support/lambda-context.js'

// DynamoDB bills a write by the KB it writes, not per request: what a run costs is the write
// units its two writes consume, as the engine reckons them (ReturnConsumedCapacity). The README's
// cost figures (docs/comparison.md#what-a-run-costs) are these.
let client: DynamoDBClient
let tableName: string

beforeAll(async () => {
  client = testDynamoDBClient()
  tableName = await freshTable(client, 'units')
})
afterAll(() => client.destroy())

/** Write units by write, in order, of `runs` runs of one job (each a tick of its own). */
async function writeUnitsOf(runs: number, historySize?: number, functionName?: string): Promise<number[]> {
  const counting = testDynamoDBClient()
  const units: number[] = []
  onConsumedCapacity(counting, (operation, consumed) => {
    if (operation === 'PutItem') units.push(consumed ?? Number.NaN)
  })
  const key = `units-${historySize ?? 'default'}-${functionName?.length ?? 0}`
  const handler = withSingleton(async () => 'done', {
    store: new DynamoDBLockStore({ client: counting, tableName }),
    key,
    logger: false,
    metrics: false,
    ...(historySize !== undefined && { historySize }),
  })
  for (let run = 0; run < runs; run++) {
    const context = lambdaContext(functionName === undefined ? {} : { functionName })
    await handler(schedulerEvent(new Date(Date.UTC(2030, 0, 1, 0, run)).toISOString()), context)
  }
  counting.destroy()
  return units
}

describe('what a run writes to DynamoDB, in write units', () => {
  it('costs two units a write once the record holds its default ten runs of history', async () => {
    const units = await writeUnitsOf(12)
    expect(units).toHaveLength(24) // an acquisition and a release a run
    expect(units.slice(0, 2)).toEqual([1, 1]) // a first run: no history yet
    expect(units.slice(-4)).toEqual([2, 2, 2, 2]) // ten runs of history, as attributes alone (no lock_body)
  })

  it('costs three with the longest function name Lambda takes (64 characters), in every owner', async () => {
    const units = await writeUnitsOf(12, undefined, 'a'.repeat(64))
    expect(units.slice(-4)).toEqual([3, 3, 3, 3])
  })

  it("costs a new container's take (an UpdateItem, billed by the item) two units too", async () => {
    await writeUnitsOf(12, undefined, 'cold')
    const counting = testDynamoDBClient()
    const units: [string, number][] = []
    onConsumedCapacity(counting, (operation, consumed) => units.push([operation, consumed ?? Number.NaN]))
    const handler = withSingleton(async () => 'done', {
      store: new DynamoDBLockStore({ client: counting, tableName }),
      key: 'units-default-4',
      logger: false,
      metrics: false,
    })
    await handler(
      schedulerEvent(new Date(Date.UTC(2030, 0, 2)).toISOString()),
      lambdaContext({ functionName: 'cold' }),
    )
    counting.destroy()
    // The take, its raise and the release; no probe is sent when no token is read.
    expect(units).toEqual([
      ['UpdateItem', 2],
      ['PutItem', 2],
      ['PutItem', 2],
    ])
  })

  it('costs one unit a write with no history kept (historySize: 0)', async () => {
    const units = await writeUnitsOf(12, 0)
    expect(units).toEqual(Array(24).fill(1))
  })
})
