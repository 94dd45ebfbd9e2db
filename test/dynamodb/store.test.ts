import { type DynamoDBClient, UpdateItemCommand } from '@aws-sdk/client-dynamodb'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { LockCorruptedError, LockStoreError } from '../../lib/core/errors.js'
import { parseRecord } from '../../lib/core/parse-record.js'
import { serializeRecord } from '../../lib/core/record.js'
import { type LockStore, ReadStatus, type WriteResult, WriteStatus } from '../../lib/core/store.js'
import { DynamoDBLockStore } from '../../lib/dynamodb/index.js'
import { BODY_ATTRIBUTE, VERSION_ATTRIBUTE } from '../../lib/dynamodb/item.js'
import { deleteItem, freshTable, getItem, putItem, testDynamoDBClient } from '../support/dynamodb.js'

let client: DynamoDBClient
let tableName: string
let keys = 0
const freshKey = (label: string): string => `store/${label}-${++keys}`
const body = (fields: Record<string, unknown> = {}): string =>
  JSON.stringify({ v: 1, token: 3, expires_at: 1740151473.206, owner: 'me', ...fields })

beforeAll(async () => {
  client = testDynamoDBClient()
  tableName = await freshTable(client, 'store')
})

afterAll(() => client.destroy())

const storeOn = (options: Partial<ConstructorParameters<typeof DynamoDBLockStore>[0]> = {}) =>
  new DynamoDBLockStore({ client, tableName, ...options })

const written = (result: WriteResult) => {
  if (result.status !== WriteStatus.Written) throw new Error(`expected a write, got ${result.status}`)
  return result
}

const failure = (call: Promise<unknown>): Promise<unknown> =>
  call.then(
    () => undefined,
    (error: unknown) => error,
  )

describe('DynamoDBLockStore on DynamoDB Local', () => {
  it('stores the record as native attributes and its version, and reads back the bytes written', async () => {
    const key = freshKey('native')
    const text = serializeRecord({
      ...JSON.parse(body()),
      state: { pages: [1, 2], cursor: 'x' },
      last_run: '2026-11-21T03:00:00Z',
    })
    const store = storeOn()
    const { etag } = written(await store.create(key, text))
    expect(await getItem(client, tableName, { pk: { S: key } })).toEqual({
      pk: { S: key },
      v: { N: '1' },
      token: { N: '3' },
      expires_at: { N: '1740151473.206' },
      owner: { S: 'me' },
      last_run: { S: '2026-11-21T03:00:00Z' },
      state: { M: { cursor: { S: 'x' }, pages: { L: [{ N: '1' }, { N: '2' }] } } },
      [VERSION_ATTRIBUTE]: { S: expect.any(String) },
    })
    // A store that did not write it (a new process) reads the same bytes under the same etag.
    expect(await storeOn().read(key)).toMatchObject({ status: ReadStatus.Found, body: text, etag })
    const next = serializeRecord({ ...parseRecord(text, key), token: 4 })
    const replaced = written(await store.replace(key, next, etag))
    expect(await storeOn().read(key)).toMatchObject({ body: next, etag: replaced.etag })
    expect(replaced.etag).not.toBe(etag)
  })

  it('keeps the text beside the attributes of a body they would not spell back', async () => {
    const key = freshKey('text')
    // Spelled as DynamoDB would not answer it: 1.50, and a map out of order.
    const text =
      '{"v":1,"token":3,"expires_at":1740151473.206,"owner":"me","ratio":1.50,"state":{"b":1,"a":2}}'
    const { etag } = written(await storeOn().create(key, text))
    const item = await getItem(client, tableName, { pk: { S: key } })
    expect(item?.[BODY_ATTRIBUTE]).toEqual({ S: text })
    expect(item?.[VERSION_ATTRIBUTE]).toEqual({ S: etag })
    expect(await storeOn().read(key)).toMatchObject({ status: ReadStatus.Found, body: text, etag })
  })

  it('notices a field edited in place from outside: new etag, the old one refused, the edit read', async () => {
    const key = freshKey('edited')
    const { etag } = written(await storeOn().create(key, body()))
    // An operator "force-releases" in the console: one attribute changes, the version stays.
    await client.send(
      new UpdateItemCommand({
        TableName: tableName,
        Key: { pk: { S: key } },
        UpdateExpression: 'SET expires_at = :zero',
        ExpressionAttributeValues: { ':zero': { N: '0' } },
      }),
    )
    const read = await storeOn().read(key)
    expect(read.status).toBe(ReadStatus.Found)
    if (read.status !== ReadStatus.Found) return
    expect(read.etag).not.toBe(etag)
    expect(JSON.parse(read.body)).toEqual(JSON.parse(body({ expires_at: 0 })))
    const store = storeOn()
    expect((await store.replace(key, body({ token: 4 }), etag)).status).toBe(WriteStatus.PreconditionFailed)
    written(await store.replace(key, body({ token: 4 }), read.etag))
  })

  it('refuses a replace from the writer itself once its item was edited in place', async () => {
    const key = freshKey('edited-writer')
    const store = storeOn()
    const { etag } = written(await store.create(key, body()))
    await client.send(
      new UpdateItemCommand({
        TableName: tableName,
        Key: { pk: { S: key } },
        UpdateExpression: 'SET #o = :o',
        ExpressionAttributeNames: { '#o': 'owner' },
        ExpressionAttributeValues: { ':o': { S: 'operator' } },
      }),
    )
    expect((await store.replace(key, body({ token: 4 }), etag)).status).toBe(WriteStatus.PreconditionFailed)
    expect(await getItem(client, tableName, { pk: { S: key } })).toMatchObject({ owner: { S: 'operator' } })
  })

  it('refuses a replace from the writer itself once a record field was added from outside (a console pause)', async () => {
    const key = freshKey('added-field')
    const store = storeOn()
    const { etag } = written(await store.create(key, body({ expires_at: 0 })))
    // An operator pauses in the console: UpdateItem adds `paused` and `cursor`, the version stays.
    await client.send(
      new UpdateItemCommand({
        TableName: tableName,
        Key: { pk: { S: key } },
        UpdateExpression: 'SET paused = :p, #c = :c',
        ExpressionAttributeNames: { '#c': 'cursor' },
        ExpressionAttributeValues: {
          ':p': { M: { by: { S: 'alice (console)' }, at: { N: '1795856337' } } },
          ':c': { S: 'resume-here' },
        },
      }),
    )
    // A warm holder writes over its own last write, blind: it must fail, not drop the pause.
    expect((await store.replace(key, body({ token: 4 }), etag)).status).toBe(WriteStatus.PreconditionFailed)
    expect(await getItem(client, tableName, { pk: { S: key } })).toMatchObject({
      paused: { M: { by: { S: 'alice (console)' }, at: { N: '1795856337' } } },
      cursor: { S: 'resume-here' },
    })
  })

  it('reads an item JSON cannot hold (binary, sets) as a body the core refuses', async () => {
    const key = freshKey('binary')
    await putItem(client, tableName, {
      pk: { S: key },
      v: { N: '1' },
      token: { N: '1' },
      expires_at: { N: '0' },
      owner: { S: 'x' },
      blob: { B: new Uint8Array([1, 2, 3]) },
    })
    const read = await storeOn().read(key)
    expect(read.status).toBe(ReadStatus.Found)
    if (read.status !== ReadStatus.Found) return
    expect(read.etag).toMatch(/\S/)
    expect(() => parseRecord(read.body, key, read.etag)).toThrow(LockCorruptedError)
    expect(read.body).toContain('blob')
  })

  it.each([
    ['a number too small for DynamoDB', '{"v":1,"token":1,"expires_at":1e-200,"owner":"x"}'],
    [
      'a number with more than 38 digits',
      `{"v":1,"token":1,"expires_at":0,"owner":"x","n":${'1'.repeat(39)}}`,
    ],
    ['a field named like the version attribute', body({ [VERSION_ATTRIBUTE]: 'mine' })],
    ['a field named like the partition key', body({ pk: 'other' })],
    ['an empty field name', body({ '': 1 })],
    ['a lone surrogate', body({ owner: '\ud800' })],
    ['a body that is not a JSON object', '[1,2]'],
  ])('refuses, writing nothing, %s', async (_what, text) => {
    const key = freshKey('unrepresentable')
    const error = await failure(storeOn().create(key, text))
    expect(error).toBeInstanceOf(LockStoreError)
    expect((error as LockStoreError).retryable).toBe(false)
    expect(await getItem(client, tableName, { pk: { S: key } })).toBeUndefined()
  })

  it('works on a table with its own partition key name and a sort key', async () => {
    const table = await freshTable(client, 'composite', { partitionKey: 'id', sortKey: 'kind' })
    const store = new DynamoDBLockStore({
      client,
      tableName: table,
      partitionKey: 'id',
      sortKey: { name: 'kind', value: 'lock' },
    })
    const key = freshKey('composite')
    const { etag } = written(await store.create(key, body()))
    expect((await store.create(key, body())).status).toBe(WriteStatus.PreconditionFailed)
    written(await store.replace(key, body({ token: 4 }), etag))
    expect(await getItem(client, table, { id: { S: key }, kind: { S: 'lock' } })).toMatchObject({
      token: { N: '4' },
    })
  })

  it('fails without retry when the table does not exist', async () => {
    const error = await failure(storeOn({ tableName: 'no-such-table' }).read('k'))
    expect(error).toBeInstanceOf(LockStoreError)
    expect((error as LockStoreError).retryable).toBe(false)
  })

  it('tells a missing item from a changed one on an engine that sends no item with a failed condition', async () => {
    // dynalite ignores ReturnValuesOnConditionCheckFailure: strip it, as if the engine had.
    const bare = testDynamoDBClient()
    bare.middlewareStack.add(
      (next) => async (args) => {
        delete (args.input as { ReturnValuesOnConditionCheckFailure?: unknown })
          .ReturnValuesOnConditionCheckFailure
        return next(args)
      },
      { step: 'initialize', name: 'stripReturnValuesOnConditionCheckFailure' },
    )
    const store: LockStore = new DynamoDBLockStore({ client: bare, tableName })
    const changed = freshKey('changed')
    const { etag } = written(await store.create(changed, body()))
    written(await storeOn().replace(changed, body({ token: 4 }), etag))
    expect((await store.replace(changed, body({ token: 5 }), etag)).status).toBe(
      WriteStatus.PreconditionFailed,
    )
    const gone = freshKey('gone')
    const created = written(await store.create(gone, body()))
    await deleteItem(client, tableName, { pk: { S: gone } })
    expect((await store.replace(gone, body({ token: 4 }), created.etag)).status).toBe(WriteStatus.Absent)
    bare.destroy()
  })

  it('marks a failed condition as ambiguous when the SDK retried a write that had landed', async () => {
    const retrying = testDynamoDBClient({ maxAttempts: 2 })
    let lost = 0
    // The first PutItem lands, and its answer is lost on the way back: the SDK sends it again.
    retrying.middlewareStack.add(
      (next, context) => async (args) => {
        const answer = await next(args)
        if (context.commandName === 'PutItemCommand' && lost++ === 0) {
          throw Object.assign(new Error('answer lost'), { name: 'TimeoutError', $metadata: {} })
        }
        return answer
      },
      { step: 'deserialize', name: 'loseFirstAnswer' },
    )
    const store = new DynamoDBLockStore({ client: retrying, tableName })
    const result = await store.create(freshKey('ambiguous'), body())
    expect(result).toMatchObject({ status: WriteStatus.PreconditionFailed, ambiguous: true })
    retrying.destroy()
  })

  it('uses one attempt per call on its default client', async () => {
    const store = new DynamoDBLockStore({ tableName })
    expect(await store.client.config.maxAttempts()).toBe(1)
  })
})
