import { setTimeout as sleep } from 'node:timers/promises'
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ExitCode } from '../../lib/cli/main.js'
import { DynamoDBLockStore } from '../../lib/dynamodb/index.js'
import { Lock } from '../../lib/index.js'
import { cliIn } from '../support/cli.js'
import { freshTable, testDynamoDBClient } from '../support/dynamodb.js'
import { leaseOf } from '../support/lease-of.js'

let client: DynamoDBClient
/** A client whose every request waits 20 ms before it is sent: slower than 1 ms, always. */
let slowClient: DynamoDBClient
let tableName: string

beforeAll(async () => {
  client = testDynamoDBClient()
  slowClient = testDynamoDBClient()
  slowClient.middlewareStack.add(
    (next) => async (args) => {
      await sleep(20)
      return next(args)
    },
    { step: 'finalizeRequest', name: 'slowRequests' },
  )
  tableName = await freshTable(client, 'cli-store-options')
})

afterAll(() => {
  client.destroy()
  slowClient.destroy()
})

const cli = (...argv: string[]) => cliIn([...argv, '--table', tableName], { dynamodb: client })

describe('the store options of the command line, on a DynamoDB table', () => {
  it("gives the store --request-timeout as its requestTimeoutMs: 1 ms fails a read, as the store's failure", async () => {
    const store = new DynamoDBLockStore({ client, tableName })
    await leaseOf(new Lock({ store, key: 'locks/timeout', ttlMs: 600_000 }).tryAcquire())
    // DynamoDB Local may answer a read on a warm connection within 1 ms: this client's take 20.
    const { code, out, err } = await cliIn(
      ['inspect', '--key', 'locks/timeout', '--request-timeout', '0.001', '--table', tableName],
      { dynamodb: slowClient },
    )
    expect({ code, out }).toEqual({ code: ExitCode.Failure, out: '' })
    expect(err).toMatch(/^LockStoreError: .*request timed out$/)
    expect(await cli('inspect', '--key', 'locks/timeout', '--request-timeout', '10')).toMatchObject({
      code: ExitCode.Ok,
    })
  })
})
