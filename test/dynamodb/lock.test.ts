import type { DynamoDBClient } from '@aws-sdk/client-dynamodb'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { TABLE_LOCK_ACTIONS } from '../../infra/lock-table.js'
import { LockCorruptedError } from '../../lib/core/errors.js'
import { Lock } from '../../lib/core/lock.js'
import { DynamoDBLockStore } from '../../lib/dynamodb/index.js'
import { freshTable, getItem, putItem, testDynamoDBClient } from '../support/dynamodb.js'
import { leaseOf } from '../support/lease-of.js'
import { countRequests } from '../support/requests.js'
import { expectTokenOfStoreTime, storeTime } from '../support/store-time.js'

let client: DynamoDBClient
let tableName: string
let keys = 0
const freshKey = (label: string): string => `locks/${label}-${++keys}`

beforeAll(async () => {
  client = testDynamoDBClient()
  tableName = await freshTable(client, 'lock')
})

afterAll(() => client.destroy())

const lockOn = (key: string) => new Lock({ store: new DynamoDBLockStore({ client, tableName }), key })
/** The engine's clock, as its answers date it. */
const now = () => storeTime(new DynamoDBLockStore({ client, tableName }))

describe('Lock on DynamoDB Local', () => {
  it('sends only the operations LockTable.grant allows, and needs each of them', async () => {
    const counted = testDynamoDBClient()
    const requests = countRequests(counted)
    const key = freshKey('granted')
    const store = () => new DynamoDBLockStore({ client: counted, tableName })
    // Take (create), find it held, renew, checkpoint, release, take the released lock again
    // (UpdateItem), and probe the store's clock as a Lambda's INIT does (GetItem of the key).
    const lease = await leaseOf(new Lock({ store: store(), key }).tryAcquire())
    expect(await leaseOf(new Lock({ store: store(), key }).tryAcquire())).toBeNull()
    await lease?.renew()
    await lease?.saveCheckpoint({ done: 1 })
    await lease?.release()
    await (await leaseOf(new Lock({ store: store(), key }).tryAcquire()))?.release()
    await store().probeDate(key)
    counted.destroy()
    const sent = [...requests.byOperation.keys()].map((operation) => `dynamodb:${operation}`).sort()
    expect(sent).toEqual([...TABLE_LOCK_ACTIONS].sort())
  })

  it.each(['lock_version', 'lock_body', 'pk'])(
    'refuses a job field named %s (the store keeps it beside the record) with LockOptionsError, before sending, the lease held',
    async (name) => {
      const key = freshKey(`reserved-${name}`)
      const lease = await lockOn(key).acquire({ waitMs: 0 })
      const before = await getItem(client, tableName, { pk: { S: key } })
      await expect(lease.renew(undefined, { fields: { [name]: 'x' } })).rejects.toMatchObject({
        name: 'LockOptionsError',
        message: expect.stringContaining(`"${name}"`),
      })
      await expect(lease.release({ fields: { [name]: 'x' } })).rejects.toMatchObject({
        name: 'LockOptionsError',
      })
      expect(await getItem(client, tableName, { pk: { S: key } })).toEqual(before)
      expect(lease.isHeld).toBe(true)
      await lease.release()
    },
  )

  it('grants exactly one of 10 concurrent tryAcquire calls', async () => {
    const key = freshKey('race')
    const before = await now()
    const leases = await Promise.all(Array.from({ length: 10 }, () => leaseOf(lockOn(key).tryAcquire())))
    const granted = leases.filter((lease) => lease !== null)
    expect(granted).toHaveLength(1)
    const token = await granted[0]?.fencingToken()
    expectTokenOfStoreTime(token, before, await now())
    expect(granted[0]?.record.run).toBe(1)
  })

  it('keeps the token on release and hands a higher one to the next acquirer', async () => {
    const key = freshKey('release')
    const first = await leaseOf(lockOn(key).tryAcquire())
    await first?.release()
    const item = await getItem(client, tableName, { pk: { S: key } })
    expect(item).toMatchObject({
      token: { N: String(first?.record.token) },
      run: { N: '1' },
      expires_at: { N: '0' },
    })
    const second = await leaseOf(lockOn(key).tryAcquire())
    expect(second?.record.token).toBeGreaterThan(first?.record.token ?? Number.POSITIVE_INFINITY)
    expect(second?.record.run).toBe(2)
    await second?.release()
  })

  it('refuses an item it cannot read as a record with LockCorruptedError, and leaves it unchanged', async () => {
    const key = freshKey('corrupted')
    // A set is valid DynamoDB, but JSON has no set: the record cannot be read without changing it.
    const corrupted = {
      pk: { S: key },
      v: { N: '1' },
      token: { N: '4' },
      expires_at: { N: '0' },
      owner: { S: 'someone' },
      tags: { SS: ['a', 'b'] },
    }
    await putItem(client, tableName, corrupted)
    const error = await leaseOf(lockOn(key).tryAcquire()).then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(error).toBeInstanceOf(LockCorruptedError)
    expect(await getItem(client, tableName, { pk: { S: key } })).toEqual(corrupted)

    const wrongType = {
      pk: { S: key },
      v: { N: '1' },
      token: { S: 'four' },
      expires_at: { N: '0' },
      owner: { S: 'x' },
    }
    await putItem(client, tableName, wrongType)
    await expect(leaseOf(lockOn(key).tryAcquire())).rejects.toBeInstanceOf(LockCorruptedError)
    expect(await getItem(client, tableName, { pk: { S: key } })).toEqual(wrongType)
  })
})
