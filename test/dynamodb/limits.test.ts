import { type DynamoDBClient, UpdateItemCommand } from '@aws-sdk/client-dynamodb'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ExitCode } from '../../lib/cli/main.js'
import { LockOptionsError } from '../../lib/core/errors.js'
import { Lock } from '../../lib/core/lock.js'
import { WriteStatus } from '../../lib/core/store.js'
import { DynamoDBLockStore } from '../../lib/dynamodb/index.js'
import { cliIn } from '../support/cli.js'
import { freshTable, getItem, putRawItem, testDynamoDBClient } from '../support/dynamodb.js'
import { leaseOf } from '../support/lease-of.js'

let client: DynamoDBClient
let tableName: string
let keys = 0
const freshKey = (label: string): string => `limits/${label}-${++keys}`

beforeAll(async () => {
  client = testDynamoDBClient()
  tableName = await freshTable(client, 'limits')
})

afterAll(() => client.destroy())

const storeOn = () => new DynamoDBLockStore({ client, tableName })
const item = (key: string) => getItem(client, tableName, { pk: { S: key } })
const cli = (...argv: string[]) => cliIn([...argv, '--table', tableName], { dynamodb: client })

/** A team's own fields beside the record: more than one condition per attribute could name. */
const teamFields = (count: number): Record<string, number> =>
  Object.fromEntries(Array.from({ length: count }, (_, i) => [`team_field_${i}`, i]))

const failure = (call: Promise<unknown>): Promise<unknown> =>
  call.then(
    () => undefined,
    (error: unknown) => error,
  )

/** `depth` levels of objects, the outermost included. */
const nested = (depth: number): Record<string, unknown> => {
  let value: Record<string, unknown> = { leaf: 1 }
  for (let level = 1; level < depth; level++) value = { next: value }
  return value
}

describe('DynamoDBLockStore within what DynamoDB allows', () => {
  it('acquires, renews and releases a lock whose item holds 400 attributes', async () => {
    const key = freshKey('wide')
    const record = { v: 1, token: 5, expires_at: 0, owner: 'old', ...teamFields(400) }
    await putRawItem(client, tableName, { pk: { S: key } }, JSON.stringify(record))
    const lease = await leaseOf(new Lock({ store: storeOn(), key }).tryAcquire())
    expect(lease).not.toBeNull()
    await lease?.renew()
    await lease?.release()
    expect(await item(key)).toMatchObject({ team_field_399: { N: '399' }, expires_at: { N: '0' } })
  })

  it('force-releases and resets, forced and back to the clock, a held lock whose item holds 400 attributes', async () => {
    const key = freshKey('wide-held')
    const held = { v: 1, token: 5, expires_at: 4_000_000_000, owner: 'stuck', ...teamFields(400) }
    await putRawItem(client, tableName, { pk: { S: key } }, JSON.stringify(held))
    expect((await cli('force-release', '--key', key, '--owner', 'alice')).code).toBe(ExitCode.Ok)
    await putRawItem(client, tableName, { pk: { S: key } }, JSON.stringify(held))
    expect((await cli('reset', '--key', key, '--token', '900', '--force')).code).toBe(ExitCode.Ok)
    expect(await item(key)).toMatchObject({ token: { N: '900' } })
    await putRawItem(client, tableName, { pk: { S: key } }, JSON.stringify({ ...held, token: 9e15 }))
    expect((await cli('reset', '--key', key, '--back-to-clock', '--force')).code).toBe(ExitCode.Ok)
  })

  it('still refuses a replace after an outsider edited a record field in place on such an item', async () => {
    const key = freshKey('wide-edited')
    const text = JSON.stringify({
      v: 1,
      token: 5,
      expires_at: 4_000_000_000,
      owner: 'me',
      ...teamFields(400),
    })
    const store = storeOn()
    const created = await store.create(key, text)
    if (created.status !== WriteStatus.Written) throw new Error(`not created: ${created.status}`)
    await client.send(
      new UpdateItemCommand({
        TableName: tableName,
        Key: { pk: { S: key } },
        UpdateExpression: 'SET expires_at = :zero',
        ExpressionAttributeValues: { ':zero': { N: '0' } },
      }),
    )
    expect((await store.replace(key, text.replace('"token":5', '"token":6'), created.etag)).status).toBe(
      WriteStatus.PreconditionFailed,
    )
  })
})

describe('checkpoints DynamoDB cannot hold', () => {
  it.each([
    ['nested deeper than DynamoDB allows', nested(32)],
    ['holding a number too small for DynamoDB', { tiny: 1e-200 }],
    ['holding a number too large for DynamoDB', { huge: 1e200 }],
  ])('refuses a checkpoint %s with LockOptionsError, writing nothing', async (_what, checkpoint) => {
    const key = freshKey('checkpoint')
    const lease = await leaseOf(new Lock({ store: storeOn(), key }).tryAcquire())
    const before = await item(key)
    const error = await failure(lease?.saveCheckpoint(checkpoint as never) ?? Promise.resolve())
    expect(error).toBeInstanceOf(LockOptionsError)
    expect(await item(key)).toEqual(before)
    // The lease is unharmed: the next checkpoint lands.
    await lease?.saveCheckpoint({ page: 2 })
    await lease?.release()
  })

  it('stores a checkpoint nested exactly as deep as DynamoDB allows', async () => {
    const key = freshKey('checkpoint-deepest')
    const lease = await leaseOf(new Lock({ store: storeOn(), key }).tryAcquire())
    await lease?.saveCursor(nested(31) as never)
    await lease?.release()
    expect(await item(key)).toHaveProperty('cursor.M.next')
  })
})

describe('key attributes named like a record field', () => {
  it.each([
    ['the partition key', { partitionKey: 'owner' }, 'owner'],
    ['the partition key', { partitionKey: 'state' }, 'state'],
    ['the partition key', { partitionKey: 'lock_version' }, 'lock_version'],
    ['the sort key', { sortKey: { name: 'cursor', value: 'lock' } }, 'cursor'],
  ])('refuses %s named %j where it is configured', (_what, options, name) => {
    const error = (() => {
      try {
        new DynamoDBLockStore({ client, tableName, ...options })
      } catch (thrown) {
        return thrown
      }
      return undefined
    })()
    expect(error).toBeInstanceOf(LockOptionsError)
    expect((error as Error).message).toContain(`"${name}"`)
  })
})
