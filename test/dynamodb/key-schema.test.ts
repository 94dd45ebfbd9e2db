import type { DynamoDBClient } from '@aws-sdk/client-dynamodb'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ExitCode } from '../../lib/cli/main.js'
import { DynamoDBLockStore } from '../../lib/dynamodb/index.js'
import { ConfigurationReason, Lock, LockConfigurationError, withSingleton } from '../../lib/index.js'
import { cliIn } from '../support/cli.js'
import { freshTable, testDynamoDBClient } from '../support/dynamodb.js'
import { lambdaContext } from '../support/lambda-context.js'
import { leaseOf } from '../support/lease-of.js'

// A table keyed `lock_id`, used by a store told nothing of it (the default partition key is `pk`).
let client: DynamoDBClient
let tableName: string

beforeAll(async () => {
  client = testDynamoDBClient()
  tableName = await freshTable(client, 'keyed', { partitionKey: 'lock_id' })
  const store = new DynamoDBLockStore({ client, tableName, partitionKey: 'lock_id' })
  await (await leaseOf(new Lock({ store, key: 'locks/nightly-report' }).tryAcquire()))?.release()
})

afterAll(() => client.destroy())

/** What `call` rejected with, checked to be the configuration error of a key that is not the table's. */
async function keySchemaError(call: Promise<unknown>): Promise<LockConfigurationError> {
  const error = await call.then(
    () => expect.unreachable('the call succeeded'),
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(LockConfigurationError)
  expect(error).toMatchObject({ reason: ConfigurationReason.KeySchema, retryable: false })
  const { message } = error as LockConfigurationError
  expect(message).toMatch(/^the table's key is not "pk"/)
  expect(message).toContain('partitionKey')
  expect(message).toContain('LAMBDA_SINGLETON_PARTITION_KEY')
  expect(message).toContain('--partition-key')
  return error as LockConfigurationError
}

describe('a lock table whose partition key is not the one the store was given, on DynamoDB Local', () => {
  it('fails a read with LockConfigurationError naming the partition-key option and variable', async () => {
    const store = new DynamoDBLockStore({ client, tableName })
    const error = await keySchemaError(store.read('locks/nightly-report'))
    expect(error.message).toContain(`DynamoDB GetItem of "locks/nightly-report" in ${tableName}`)
    expect(error.cause).toMatchObject({ name: 'ValidationException' })
  })

  it('fails a create the same way', async () => {
    const store = new DynamoDBLockStore({ client, tableName })
    await keySchemaError(store.create('locks/other', '{"v":1,"token":1,"expires_at":0,"owner":"x"}'))
  })

  it('fails a withSingleton invocation at once, naming LAMBDA_SINGLETON_PARTITION_KEY', async () => {
    let ran = false
    const handler = withSingleton(
      async () => {
        ran = true
      },
      { store: new DynamoDBLockStore({ client, tableName }), key: 'nightly-report', logger: false },
    )
    await keySchemaError(handler({}, lambdaContext()))
    expect(ran).toBe(false)
  })

  it('makes the CLI say so for inspect and list, with the configuration exit code, instead of "no locks"', async () => {
    const inspect = await cliIn(['inspect', '--table', tableName, '--key', 'locks/nightly-report'], {
      dynamodb: client,
    })
    expect(inspect.code).toBe(ExitCode.Configuration)
    expect(inspect.err).toMatch(/--partition-key/)
    for (const prefix of [[], ['--prefix', 'locks/']]) {
      const list = await cliIn(['list', '--table', tableName, ...prefix], { dynamodb: client })
      expect(list).toMatchObject({ code: ExitCode.Configuration, out: '' })
      expect(list.err).toMatch(
        new RegExp(
          `^ConfigurationError: the items of table ${tableName} have no "pk" attribute: .*--partition-key NAME`,
        ),
      )
    }
    const right = await cliIn(['list', '--table', tableName, '--partition-key', 'lock_id'], {
      dynamodb: client,
    })
    expect(right.code).toBe(ExitCode.Ok)
    expect(right.out).toContain('locks/nightly-report')
  })

  it('lists an empty table as having no locks, whatever its key', async () => {
    const empty = await freshTable(client, 'keyed-empty', { partitionKey: 'lock_id' })
    expect(await cliIn(['list', '--table', empty], { dynamodb: client })).toMatchObject({
      code: ExitCode.Ok,
      out: `no locks under "" in table ${empty}`,
    })
  })
})
