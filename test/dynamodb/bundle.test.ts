import type { DynamoDBClient } from '@aws-sdk/client-dynamodb'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DynamoDBLockStore } from '../../lib/dynamodb/index.js'
import { bundleLikeTheConstruct, invokeBundle } from '../support/bundle.js'
import { dynamodbProgramEnv } from '../support/cli-engines.js'
import { freshTable, getItem, testDynamoDBClient } from '../support/dynamodb.js'
import { schedulerEvent } from '../support/lambda-context.js'
import { expectTokenOfStoreTime, storeTime } from '../support/store-time.js'

let client: DynamoDBClient
let tableName: string
let bundle: { path: string; code: string }

beforeAll(async () => {
  client = testDynamoDBClient()
  tableName = await freshTable(client, 'bundle', { partitionKey: 'lock_id' })
  bundle = await bundleLikeTheConstruct('test/dynamodb/fixtures/handler.ts', 'dynamodb')
}, 60_000)

afterAll(() => client.destroy())

async function invoke(event: unknown, lockTable = tableName): Promise<unknown> {
  return invokeBundle(bundle.path, event, {
    ...dynamodbProgramEnv(),
    LAMBDA_SINGLETON_STORE: 'dynamodb',
    LAMBDA_SINGLETON_TABLE: lockTable,
    LAMBDA_SINGLETON_PARTITION_KEY: 'lock_id',
  })
}

describe('a handler bound to a LockTable, bundled like the construct bundles it', () => {
  it('leaves the S3 store and its SDK out of the bundle', () => {
    expect(bundle.code).toContain('attribute_not_exists')
    expect(bundle.code).not.toMatch(/If-None-Match|S3Client/)
  })

  it('locks on the table from the environment: one of three concurrent runs works, the next gets a higher token', async () => {
    const tick = schedulerEvent('2026-11-22T05:00:00Z', 'hourly')
    const now = () => storeTime(new DynamoDBLockStore({ client, tableName, partitionKey: 'lock_id' }))
    const before = await now()
    const results = await Promise.all([invoke(tick), invoke(tick), invoke(tick)])
    const after = await now()
    const ran = results.filter((r) => (r as { skipped?: boolean }).skipped !== true)
    expect(ran).toEqual([{ token: expect.any(Number) }])
    const { token } = ran[0] as { token: number }
    expectTokenOfStoreTime(token, before, after)
    const item = await getItem(client, tableName, { lock_id: { S: 'locks/handler' } })
    expect(item).toMatchObject({ token: { N: String(token) }, run: { N: '1' }, expires_at: { N: '0' } })
    const next = await invoke({ ...tick, scheduledTime: '2026-11-22T06:00:00Z' })
    expect(next).toEqual({ token: expect.any(Number) })
    expect((next as { token: number }).token).toBeGreaterThan(token)
  })

  it('names the DynamoDB operation that failed by its API name, which minifying does not mangle', async () => {
    const failed = await invoke({}, `no-such-table-${tableName}`).then(
      (result) => new Error(`it ran: ${JSON.stringify(result)}`),
      (error: { stderr?: string }) => error,
    )
    const { stderr } = failed as { stderr?: string }
    expect(stderr).toMatch(/errorType: 'LockStoreError'/)
    expect(stderr).toMatch(
      // The first request the lock sends: the take's UpdateItem, or a GetItem where it reads first.
      /errorMessage: 'DynamoDB (UpdateItem|GetItem) of \\?"locks\/handler\\?" in no-such-table-\S+ failed: ResourceNotFoundException/,
    )
  })
})
