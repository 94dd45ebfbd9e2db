import type { AttributeValue, DynamoDBClient } from '@aws-sdk/client-dynamodb'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  type ReadResult,
  ReadStatus,
  type TakeRequest,
  type TakeResult,
  TakeStatus,
  WriteStatus,
} from '../../lib/core/store.js'
import { DynamoDBLockStore } from '../../lib/dynamodb/index.js'
import { BODY_ATTRIBUTE } from '../../lib/dynamodb/item.js'
import { Lock } from '../../lib/index.js'
import { freshTable, getItem, putItem, putRawItem, testDynamoDBClient } from '../support/dynamodb.js'
import { countRequests } from '../support/requests.js'

/**
 * `DynamoDBLockStore.take` (`LockStore.take`) on DynamoDB Local: one UpdateItem over a released
 * record, answered with the record written and the one before, or with what is there.
 */

let client: DynamoDBClient
let tableName: string
let keys = 0
const freshKey = (label: string): string => `take/${label}-${++keys}`
const itemKey = (key: string) => ({ pk: { S: key } })
/** A released record as an outsider puts it (no text, no version), with `fields` of its own. */
const outsiderItem = (key: string, fields: Record<string, AttributeValue>) => ({
  ...itemKey(key),
  v: { N: '1' },
  token: { N: '41' },
  expires_at: { N: '0' },
  owner: { S: 'someone' },
  ...fields,
})

/** A released record, as a holder's release leaves it. */
const released = (fields: Record<string, unknown> = {}): string =>
  JSON.stringify({
    v: 1,
    token: 41,
    expires_at: 0,
    owner: 'previous-run',
    run: 6,
    acquired_at: 1795856000.5,
    ttl_ms: 900_000,
    last_run: '2026-11-21T03:00:00Z',
    ...fields,
  })

const request: TakeRequest = {
  owner: 'me',
  expires_at: 1795856400.125,
  acquired_at: 1795856337.25,
  ttl_ms: 60_000,
  tokenBelow: 1795856337250 + 60_000,
}

beforeAll(async () => {
  client = testDynamoDBClient()
  tableName = await freshTable(client, 'take')
})

afterAll(() => client.destroy())

const storeOn = (on: DynamoDBClient = client) => new DynamoDBLockStore({ client: on, tableName })

function taken(result: TakeResult) {
  if (result.status !== TakeStatus.Taken) throw new Error(`expected a take, got ${JSON.stringify(result)}`)
  return result
}

function found(result: ReadResult) {
  if (result.status !== ReadStatus.Found) throw new Error(`expected a record, got ${result.status}`)
  return result
}

async function create(key: string, body: string): Promise<void> {
  const result = await storeOn().create(key, body)
  if (result.status !== WriteStatus.Written) throw new Error(`could not create ${key}: ${result.status}`)
}

describe('DynamoDBLockStore.take on DynamoDB Local', () => {
  it('takes a released record in one UpdateItem, answering with the record written and the one before', async () => {
    const key = freshKey('released')
    const before = released()
    await create(key, before)
    const counted = testDynamoDBClient()
    const requests = countRequests(counted)
    const result = taken(await storeOn(counted).take(key, request))
    expect(Object.fromEntries(requests.byOperation)).toEqual({ UpdateItem: 1 })
    expect(result.previous).toBe(before)
    expect(JSON.parse(result.body)).toEqual({
      ...JSON.parse(before),
      token: 42,
      run: 7,
      owner: 'me',
      expires_at: 1795856400.125,
      acquired_at: 1795856337.25,
      ttl_ms: 60_000,
    })
    expect(result.serverDate).toEqual(expect.any(Number))
    // What a read finds now, to the byte, and under the same etag.
    const read = found(await storeOn().read(key))
    expect({ body: read.body, etag: read.etag }).toEqual({ body: result.body, etag: result.etag })
    const item = await getItem(client, tableName, itemKey(key))
    expect(item).not.toHaveProperty(BODY_ATTRIBUTE)
    expect(item).toMatchObject({ token: { N: '42' }, run: { N: '7' }, owner: { S: 'me' } })
    counted.destroy()
  })

  it('lands the next replace on the etag it answered without a read, conditioned on the item it wrote', async () => {
    const key = freshKey('then-replace')
    await create(key, released())
    const counted = testDynamoDBClient()
    const requests = countRequests(counted)
    const store = storeOn(counted)
    const { body, etag } = taken(await store.take(key, request))
    requests.reset()
    const renewed = JSON.stringify({ ...JSON.parse(body), expires_at: 1795856500 })
    const write = await store.replace(key, renewed, etag)
    expect(write.status).toBe(WriteStatus.Written)
    expect(Object.fromEntries(requests.byOperation)).toEqual({ PutItem: 1 })
    expect(found(await storeOn().read(key)).body).toBe(renewed)
    counted.destroy()
  })

  it('refuses the replace of its etag once the item it wrote was changed from outside', async () => {
    const key = freshKey('then-edited')
    await create(key, released())
    const store = storeOn()
    const { body, etag } = taken(await store.take(key, request))
    await putItem(client, tableName, {
      ...(await getItem(client, tableName, itemKey(key))),
      cursor: { S: 'set by an operator' },
    })
    const write = await store.replace(key, JSON.stringify({ ...JSON.parse(body), expires_at: 0 }), etag)
    expect(write.status).toBe(WriteStatus.PreconditionFailed)
  })

  it('keeps every other field, removes running, and raises run from absent to 1', async () => {
    const key = freshKey('fields')
    const kept = {
      state: { cursor: 'x', pages: [1, 2], nested: { ratio: 0.25 } },
      cursor: 'page-9',
      history: [{ token: 40, tick: '2026-11-21T02:00:00Z', outcome: 'ok' }],
      ended_by: { token: 39, owner: 'old', by: 'alice', action: 'force-release', at: 1795850000 },
      replaced: { token: 38, owner: 'older', at: 1795840000 },
      failures: 2,
      custom: { anything: [true, null, 'x'] },
    }
    const { run: _run, ...withoutRun } = JSON.parse(released(kept)) as Record<string, unknown>
    await create(key, JSON.stringify({ ...withoutRun, running: { token: 41, tick: '2026-11-21T03:00:00Z' } }))
    const result = taken(await storeOn().take(key, request))
    const record = JSON.parse(result.body) as Record<string, unknown>
    expect(record).toMatchObject({ ...kept, token: 42, run: 1, owner: 'me' })
    expect(record).not.toHaveProperty('running')
    expect(JSON.parse(result.previous)).toHaveProperty('running')
    const item = await getItem(client, tableName, itemKey(key))
    expect(item).not.toHaveProperty('running')
    expect(item).toMatchObject({ run: { N: '1' }, custom: { M: { anything: { L: expect.any(Array) } } } })
    expect(found(await storeOn().read(key)).etag).toBe(result.etag)
  })

  it('takes a record an outsider wrote (no text, no version), keeping its numbers as DynamoDB holds them', async () => {
    const key = freshKey('outsider')
    await putItem(client, tableName, {
      ...itemKey(key),
      v: { N: '1' },
      token: { N: '1795856000000' },
      expires_at: { N: '0' },
      owner: { S: 'script' },
      state: { M: { ratio: { N: '2.50' }, big: { N: '12345678901234567890123' } } },
    })
    const before = found(await storeOn().read(key))
    const result = taken(await storeOn().take(key, { ...request, acquired_at: 1e-7, ttl_ms: 1e21 }))
    expect(result.previous).toBe(before.body)
    const read = found(await storeOn().read(key))
    expect({ body: read.body, etag: read.etag }).toEqual({ body: result.body, etag: result.etag })
    expect(await getItem(client, tableName, itemKey(key))).toMatchObject({
      token: { N: '1795856000001' },
      run: { N: '1' },
      acquired_at: { N: '0.0000001' },
      ttl_ms: { N: '1000000000000000000000' },
    })
  })

  const refusals: [string, (key: string) => Promise<void>][] = [
    ['a held record', (key) => create(key, released({ expires_at: 1795856999 }))],
    ['a paused record', (key) => create(key, released({ v: 2, paused: { by: 'alice', at: 1795850000 } }))],
    ['a record with paused but version 1', (key) => create(key, released({ paused: { by: 'a', at: 1 } }))],
    ['a record of version 2', (key) => create(key, released({ v: 2 }))],
    [
      'a record whose token is not below tokenBelow',
      (key) => create(key, released({ token: request.tokenBelow })),
    ],
    [
      'a record whose token is a string',
      (key) => putRawItem(client, tableName, itemKey(key), released({ token: '41' })),
    ],
    [
      'a record whose run is at Number.MAX_SAFE_INTEGER',
      (key) => create(key, released({ run: Number.MAX_SAFE_INTEGER })),
    ],
    ['a record whose run is a string', (key) => create(key, released({ run: '6' }))],
    [
      'a record with no expires_at',
      (key) => putRawItem(client, tableName, itemKey(key), '{"v":1,"token":41}'),
    ],
  ]

  it.each(refusals)(
    'refuses %s: writes nothing, answers with the record as a read finds it',
    async (_, setUp) => {
      const key = freshKey('refused')
      await setUp(key)
      const before = await getItem(client, tableName, itemKey(key))
      const counted = testDynamoDBClient()
      const requests = countRequests(counted)
      const store = storeOn(counted)
      const result = await store.take(key, request)
      expect(result.status).toBe(TakeStatus.NotTaken)
      if (result.status !== TakeStatus.NotTaken) return
      expect(await getItem(client, tableName, itemKey(key))).toEqual(before)
      const read = found(await storeOn().read(key))
      const current = found(result.current)
      expect({ body: current.body, etag: current.etag }).toEqual({ body: read.body, etag: read.etag })
      expect(result.serverDate).toEqual(expect.any(Number))
      // Learned as a read's: a replace of that etag goes out at once.
      requests.reset()
      expect((await store.replace(key, released({ token: 50 }), current.etag)).status).toBe(
        WriteStatus.Written,
      )
      expect(Object.fromEntries(requests.byOperation)).toEqual({ PutItem: 1 })
      counted.destroy()
    },
  )

  it('gives back a record JSON cannot hold (a set), as it was, and answers with it as a read finds it', async () => {
    const key = freshKey('unreadable')
    const item = outsiderItem(key, { tags: { SS: ['a', 'b'] } })
    await putItem(client, tableName, item)
    const counted = testDynamoDBClient()
    const requests = countRequests(counted)
    const result = await storeOn(counted).take(key, request)
    expect(await getItem(client, tableName, itemKey(key))).toEqual(item)
    const read = found(await storeOn().read(key))
    expect(result).toMatchObject({
      status: TakeStatus.NotTaken,
      current: { status: ReadStatus.Found, body: read.body, etag: read.etag },
    })
    expect(Object.fromEntries(requests.byOperation)).toEqual({ UpdateItem: 1, PutItem: 1 })
    counted.destroy()
  })

  it('refuses an absent item: answers Absent and creates nothing', async () => {
    const key = freshKey('absent')
    const result = await storeOn().take(key, request)
    expect(result).toMatchObject({ status: TakeStatus.NotTaken, current: { status: ReadStatus.Absent } })
    expect(await getItem(client, tableName, itemKey(key))).toBeUndefined()
  })

  it('takes a record only once of two concurrent takes', async () => {
    const key = freshKey('race')
    await create(key, released())
    const results = await Promise.all([storeOn().take(key, request), storeOn().take(key, request)])
    expect(results.map((result) => result.status).sort()).toEqual([TakeStatus.NotTaken, TakeStatus.Taken])
    const item = await getItem(client, tableName, itemKey(key))
    expect(item?.token).toEqual({ N: '42' })
  })

  it('works on a table with its own partition key name and a sort key', async () => {
    const table = await freshTable(client, 'take-composite', { partitionKey: 'id', sortKey: 'kind' })
    const store = new DynamoDBLockStore({
      client,
      tableName: table,
      partitionKey: 'id',
      sortKey: { name: 'kind', value: 'lock' },
    })
    const key = freshKey('composite')
    expect((await store.create(key, released())).status).toBe(WriteStatus.Written)
    const result = taken(await store.take(key, request))
    expect(JSON.parse(result.body)).not.toHaveProperty('kind')
    expect((await store.replace(key, released({ token: 42 }), result.etag)).status).toBe(WriteStatus.Written)
  })

  it('answers NotTaken with a consistent read, and sends no UpdateItem again, once the role may not UpdateItem', async () => {
    const key = freshKey('denied')
    await create(key, released())
    const denied = testDynamoDBClient()
    const requests = countRequests(denied)
    let updates = 0
    denied.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'UpdateItemCommand') {
          updates++
          throw Object.assign(new Error('User: arn:aws:sts::1:assumed-role/job is not authorized'), {
            name: 'AccessDeniedException',
            $fault: 'client',
            $metadata: { httpStatusCode: 400 },
          })
        }
        return next(args)
      },
      { step: 'initialize', name: 'denyUpdateItem' },
    )
    const store = storeOn(denied)
    const first = await store.take(key, request)
    const read = found(await storeOn().read(key))
    expect(first).toMatchObject({
      status: TakeStatus.NotTaken,
      current: { status: ReadStatus.Found, body: read.body, etag: read.etag },
    })
    const second = await store.take(key, request)
    expect(second).toMatchObject({ status: TakeStatus.NotTaken, current: { etag: read.etag } })
    expect(updates).toBe(1)
    expect(Object.fromEntries(requests.byOperation)).toEqual({ GetItem: 2 })
    // What it read is remembered: the lock's replace goes out at once.
    requests.reset()
    expect((await store.replace(key, released({ token: 42 }), read.etag)).status).toBe(WriteStatus.Written)
    expect(Object.fromEntries(requests.byOperation)).toEqual({ PutItem: 1 })
    // Another store on the same client has not yet met the refusal: it tries the UpdateItem once.
    expect(await storeOn(denied).take(freshKey('denied-absent'), request)).toMatchObject({
      status: TakeStatus.NotTaken,
      current: { status: ReadStatus.Absent },
    })
    expect(updates).toBe(2)
    denied.destroy()
  })
})

describe('a Lock taking on DynamoDB Local', () => {
  it.each([
    ['lock_body', { N: '7' }],
    ['lock_version', { N: '1' }],
  ])(
    'gives back a record whose own attribute %s an outsider made other than text, as it was, and refuses it',
    async (name, value) => {
      const key = freshKey(`own-${name}`)
      const item = outsiderItem(key, { [name]: value })
      await putItem(client, tableName, item)
      const lock = new Lock({ store: storeOn(), key, owner: 'me', ttlMs: 60_000 })
      await expect(lock.tryAcquire()).rejects.toMatchObject({ name: 'LockCorruptedError' })
      expect(await getItem(client, tableName, itemKey(key))).toEqual(item)
    },
  )

  it('gives back a record JSON holds but no reader takes (an owner that is a number), and refuses it', async () => {
    const key = freshKey('owner-number')
    await putItem(client, tableName, outsiderItem(key, { owner: { N: '42' } }))
    const before = found(await storeOn().read(key)).body
    const lock = new Lock({ store: storeOn(), key, owner: 'me', ttlMs: 60_000 })
    await expect(lock.tryAcquire()).rejects.toMatchObject({ name: 'LockCorruptedError' })
    const after = found(await storeOn().read(key))
    expect(JSON.parse(after.body)).toEqual(JSON.parse(before))
  })
})
