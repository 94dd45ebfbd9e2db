import { type AttributeValue, DynamoDBClient } from '@aws-sdk/client-dynamodb'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { LockStoreError } from '../../lib/core/errors.js'
import { ReadStatus, type TakeRequest, TakeStatus } from '../../lib/core/store.js'
import { DynamoDBLockStore } from '../../lib/dynamodb/index.js'
import { BODY_ATTRIBUTE, readItem, VERSION_ATTRIBUTE } from '../../lib/dynamodb/item.js'
import { plusOne, storedNumber, takenItem, takeUpdate } from '../../lib/dynamodb/take.js'
import { type Answer, AnsweringServer, dynamoDBError } from '../support/answering-server.js'

const request: TakeRequest = {
  owner: 'me',
  expires_at: 1795856400.125,
  acquired_at: 1795856337.25,
  ttl_ms: 60_000,
  tokenBelow: 1795856397250,
}

const layout = { partitionKey: 'pk' }

/** A released record as the store writes it: its fields, its version and its text. */
const releasedItem: Record<string, AttributeValue> = {
  pk: { S: 'locks/nightly' },
  v: { N: '1' },
  token: { N: '41' },
  expires_at: { N: '0' },
  owner: { S: 'previous-run' },
  running: { M: { token: { N: '41' }, tick: { S: 't' } } },
  state: { M: { ratio: { N: '2.50' } } },
  [VERSION_ATTRIBUTE]: { S: 'v-old' },
  [BODY_ATTRIBUTE]: {
    S: '{"v":1,"token":41,"expires_at":0,"owner":"previous-run","running":{"token":41,"tick":"t"},"state":{"ratio":2.50}}',
  },
}

describe('the UpdateItem of a take', () => {
  it('sends the lease numbers as DynamoDB stores them: plain, without trailing zeros', () => {
    const { ExpressionAttributeValues: values } = takeUpdate('pk', {
      owner: 'me',
      expires_at: 1e21,
      acquired_at: 1e-7,
      ttl_ms: 60_000,
      tokenBelow: 2 ** 53,
    })
    expect(values).toMatchObject({
      ':expires_at': { N: '1000000000000000000000' },
      ':acquired_at': { N: '0.0000001' },
      ':ttl_ms': { N: '60000' },
      ':token_below': { N: '9007199254740992' },
      ':run_ceiling': { N: String(Number.MAX_SAFE_INTEGER) },
    })
  })

  it.each([
    [1795856400.125, '1795856400.125'],
    [-0, '0'],
    [0, '0'],
    [-1.5e-10, '-0.00000000015'],
    [1.25e22, '12500000000000000000000'],
  ])('writes %s as %s', (value, text) => {
    expect(storedNumber(value)).toBe(text)
  })

  it.each([
    ['41', '42'],
    ['5.5', '6.5'],
    ['-1', '0'],
    ['-0.5', '0.5'],
    ['-1.5', '-0.5'],
    ['99', '100'],
    ['99999999999999999999999999999999999999', '100000000000000000000000000000000000000'],
    // Spellings DynamoDB Local keeps when an UpdateItem sets them: its sum is BigDecimal's.
    ['1e21', '1000000000000000000001'],
    ['1.5E+2', '151'],
    ['5.50', '6.50'],
    // Past what a double counts exactly, and spellings a double would change: the sum stays exact.
    ['9007199254740991', '9007199254740992'],
    ['9007199254740992', '9007199254740993'],
    ['12345678901234567890123', '12345678901234567890124'],
    ['007', '8'],
    ['-0', '1'],
    ['1796302827001', '1796302827002'],
  ])('adds one to %s as DynamoDB does: %s', (text, sum) => {
    expect(plusOne(text)).toBe(sum)
  })

  it('computes the item it writes as the update expression does: the lease set, token and run raised, running and the text gone', () => {
    const update = takeUpdate('pk', request)
    const written = takenItem(releasedItem, update)
    expect(written).toEqual({
      pk: { S: 'locks/nightly' },
      v: { N: '1' },
      token: { N: '42' },
      run: { N: '1' },
      expires_at: { N: '1795856400.125' },
      acquired_at: { N: '1795856337.25' },
      ttl_ms: { N: '60000' },
      owner: { S: 'me' },
      state: { M: { ratio: { N: '2.50' } } },
      [VERSION_ATTRIBUTE]: update.ExpressionAttributeValues[':version'],
    })
    expect(takenItem({ ...releasedItem, run: { N: '6' } }, update).run).toEqual({ N: '7' })
    // It reads by its attributes, under their digest.
    const read = readItem(layout, written)
    expect(read.etag).toMatch(/^item:/)
    expect(JSON.parse(read.body)).toMatchObject({ token: 42, run: 1, owner: 'me' })
  })

  it('reads an item without its text in one order, whatever order the engine lists its attributes in', () => {
    const written = takenItem(releasedItem, takeUpdate('pk', request))
    const reversed = Object.fromEntries(Object.entries(written).reverse())
    expect(readItem(layout, reversed)).toEqual(readItem(layout, written))
  })
})

/**
 * `take` against an HTTP server that answers each operation as DynamoDB would, chosen per
 * request: the SDK deserialises the very errors a role without dynamodb:UpdateItem gets.
 */
describe('DynamoDBLockStore.take for a role that may not UpdateItem', () => {
  let server: AnsweringServer
  beforeAll(async () => {
    server = await AnsweringServer.start()
  })
  afterAll(() => server.close())

  const itemAnswer = (item?: Record<string, AttributeValue>): Answer => ({
    status: 200,
    headers: { 'content-type': 'application/x-amz-json-1.0' },
    body: JSON.stringify(item ? { Item: item } : {}),
  })
  const denied = dynamoDBError(
    'AccessDeniedException',
    'User: arn:aws:sts::123456789012:assumed-role/job/fn is not authorized to perform: dynamodb:UpdateItem',
  )

  /** A store whose client gets `answers[operation]`, and the operations and inputs it sent. */
  function storeAnswering(answers: Record<string, Answer>) {
    const client = new DynamoDBClient({
      endpoint: server.endpoint,
      region: 'eu-west-1',
      credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' },
      maxAttempts: 1,
    })
    const sent: { operation: string; input: Record<string, unknown> }[] = []
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const operation = String(context.commandName).replace(/Command$/, '')
        sent.push({ operation, input: args.input as Record<string, unknown> })
        const answer = answers[operation]
        if (!answer) throw new Error(`no answer for ${operation}`)
        server.answer = answer
        return next(args)
      },
      { step: 'initialize', name: 'answerByOperation' },
    )
    return { store: new DynamoDBLockStore({ client, tableName: 'locks' }), sent, client }
  }

  it('answers NotTaken with a consistent GetItem on the first AccessDenied, and then sends only GetItem', async () => {
    const { store, sent, client } = storeAnswering({ UpdateItem: denied, GetItem: itemAnswer(releasedItem) })
    const expected = readItem(layout, releasedItem)
    for (let take = 0; take < 3; take++) {
      expect(await store.take('locks/nightly', request)).toMatchObject({
        status: TakeStatus.NotTaken,
        current: { status: ReadStatus.Found, body: expected.body, etag: expected.etag },
        serverDate: expect.any(Number),
      })
    }
    expect(sent.map(({ operation }) => operation)).toEqual(['UpdateItem', 'GetItem', 'GetItem', 'GetItem'])
    expect(sent.slice(1).every(({ input }) => input.ConsistentRead === true)).toBe(true)
    client.destroy()
  })

  it('answers Absent when the GetItem after an AccessDenied finds no item', async () => {
    const { store, client } = storeAnswering({ UpdateItem: denied, GetItem: itemAnswer() })
    expect(await store.take('locks/nightly', request)).toMatchObject({
      status: TakeStatus.NotTaken,
      current: { status: ReadStatus.Absent },
    })
    client.destroy()
  })

  it('remembers the refusal per store: another store on the same client tries its UpdateItem once', async () => {
    const { store, sent, client } = storeAnswering({ UpdateItem: denied, GetItem: itemAnswer(releasedItem) })
    await store.take('locks/nightly', request)
    await new DynamoDBLockStore({ client, tableName: 'locks' }).take('locks/nightly', request)
    expect(sent.map(({ operation }) => operation)).toEqual(['UpdateItem', 'GetItem', 'UpdateItem', 'GetItem'])
    client.destroy()
  })

  it('fails the take when the GetItem is denied too', async () => {
    const { store, client } = storeAnswering({ UpdateItem: denied, GetItem: denied })
    const error = await store.take('locks/nightly', request).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(LockStoreError)
    expect(error).toMatchObject({ retryable: false, message: expect.stringContaining('GetItem') })
    client.destroy()
  })

  it.each([
    ['ResourceNotFoundException', false],
    ['ValidationException', false],
    ['ProvisionedThroughputExceededException', true],
    ['TransactionConflictException', true],
  ])(
    'fails on %s as before (retryable: %s), and sends UpdateItem again next time',
    async (code, retryable) => {
      const { store, sent, client } = storeAnswering({
        UpdateItem: dynamoDBError(code, 'refused'),
        GetItem: itemAnswer(releasedItem),
      })
      for (let take = 0; take < 2; take++) {
        const error = await store.take('locks/nightly', request).catch((e: unknown) => e)
        expect(error).toBeInstanceOf(LockStoreError)
        expect(error).toMatchObject({ retryable })
      }
      expect(sent.map(({ operation }) => operation)).toEqual(['UpdateItem', 'UpdateItem'])
      client.destroy()
    },
  )

  it('answers Absent for a failed condition that carries no item', async () => {
    const { store, client } = storeAnswering({
      UpdateItem: dynamoDBError('ConditionalCheckFailedException', 'The conditional request failed'),
    })
    expect(await store.take('locks/nightly', request)).toMatchObject({
      status: TakeStatus.NotTaken,
      current: { status: ReadStatus.Absent },
    })
    client.destroy()
  })

  it('asks for the item before and, on a failed condition, the item as it is', async () => {
    const { store, sent, client } = storeAnswering({
      UpdateItem: dynamoDBError('ConditionalCheckFailedException', 'The conditional request failed'),
    })
    await store.take('locks/nightly', request)
    expect(sent[0]?.input).toMatchObject({
      ReturnValues: 'ALL_OLD',
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    })
    client.destroy()
  })
})
