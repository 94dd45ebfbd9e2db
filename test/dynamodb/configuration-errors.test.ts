import { DynamoDBClient } from '@aws-sdk/client-dynamodb'
import middy from '@middy/core'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { DynamoDBLockStore } from '../../lib/dynamodb/index.js'
import { Lock, LockConfigurationError, withSingleton } from '../../lib/index.js'
import { singleton } from '../../lib/middy/index.js'
import { freshTable, testDynamoDBClient } from '../support/dynamodb.js'
import { lambdaContext } from '../support/lambda-context.js'
import { leaseOf } from '../support/lease-of.js'
import { operatorFor } from '../support/operator-for.js'
import { countRequests } from '../support/requests.js'

let client: DynamoDBClient
let tableName: string
const EXISTING = 'locks/existing'

beforeAll(async () => {
  client = testDynamoDBClient()
  tableName = await freshTable(client, 'config')
  await (
    await leaseOf(
      new Lock({ store: new DynamoDBLockStore({ client, tableName }), key: EXISTING }).tryAcquire(),
    )
  )?.release()
})

afterAll(() => client.destroy())

/**
 * A client of the test engine with an access key no account has. DynamoDB Local checks no
 * signature and refuses only access keys with characters other than letters and digits, so this
 * one has a dash, which DynamoDB itself would refuse just the same.
 */
function refusedClient() {
  const target = inject('dynamodb')
  const refused = new DynamoDBClient({
    endpoint: target.endpoint,
    region: target.region,
    maxAttempts: 1,
    credentials: { accessKeyId: 'not-a-key', secretAccessKey: 'wrong' },
  })
  return {
    refused,
    requests: countRequests(refused),
    store: new DynamoDBLockStore({ client: refused, tableName }),
  }
}

/** What `call` rejected with, checked to be a refusal of the credentials. */
async function refusal(call: Promise<unknown>): Promise<LockConfigurationError> {
  const error = await call.then(
    () => expect.unreachable('the call succeeded'),
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(LockConfigurationError)
  expect(error).toMatchObject({
    reason: 'credentials-refused',
    retryable: false,
    cause: { name: 'UnrecognizedClientException' },
  })
  expect((error as Error).message).not.toMatch(/kept failing/)
  return error as LockConfigurationError
}

describe('DynamoDB with an access key the engine refuses, on DynamoDB Local', () => {
  it('fails the first tryAcquire at once with LockConfigurationError, after one request', async () => {
    const { refused, requests, store } = refusedClient()
    const error = await refusal(leaseOf(new Lock({ store, key: 'locks/acquire' }).tryAcquire()))
    expect(error.message).toMatch(/^the AWS credentials were refused \(UnrecognizedClientException\)/)
    expect(requests.total()).toBe(1)
    refused.destroy()
  })

  it('fails a read of an existing lock at once, after one request', async () => {
    const { refused, requests, store } = refusedClient()
    await refusal(operatorFor(new Lock({ store, key: EXISTING })).inspect())
    expect(requests.byOperation.get('GetItem')).toBe(1)
    expect(requests.total()).toBe(1)
    refused.destroy()
  })

  it('fails a withSingleton invocation at once, without running the handler', async () => {
    const { refused, requests, store } = refusedClient()
    const outcomes: string[] = []
    const handler = withSingleton(async () => expect.unreachable('the handler ran'), {
      store,
      logger: false,
      onOutcome: (event) => outcomes.push(event.outcome),
    })
    await refusal(handler({}, lambdaContext({ functionName: 'with-singleton' })))
    expect(requests.total()).toBe(1)
    expect(outcomes).toEqual(['error'])
    refused.destroy()
  })

  it('fails an invocation behind the middleware at once, without running the handler', async () => {
    const { refused, requests, store } = refusedClient()
    const handler = middy()
      .use(singleton({ store, logger: false }))
      .handler(async () => expect.unreachable('the handler ran'))
    await refusal(handler({}, lambdaContext({ functionName: 'middleware' })))
    expect(requests.total()).toBe(1)
    refused.destroy()
  })
})
