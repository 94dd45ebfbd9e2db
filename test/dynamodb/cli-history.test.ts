import type { DynamoDBClient } from '@aws-sdk/client-dynamodb'
import { afterAll, beforeAll, describe, inject } from 'vitest'
import { DynamoDBLockStore } from '../../lib/dynamodb/index.js'
import { historySuite } from '../cli/history-suite.js'
import { cliIn, runCliProgram } from '../support/cli.js'
import { freshTable, testDynamoDBClient } from '../support/dynamodb.js'

let client: DynamoDBClient
let tableName: string

beforeAll(async () => {
  client = testDynamoDBClient()
  tableName = await freshTable(client, 'history')
})

afterAll(() => client.destroy())

describe('lambda-singleton history, on DynamoDB Local', () => {
  historySuite(() => {
    const store = () => new DynamoDBLockStore({ client, tableName })
    return {
      store,
      cli: (...argv) => cliIn([...argv, '--table', tableName], { dynamodb: client }),
      program: (...argv) => {
        const target = inject('dynamodb')
        return runCliProgram([...argv, '--table', tableName], {
          AWS_ENDPOINT_URL_DYNAMODB: target.endpoint,
          AWS_REGION: target.region,
          AWS_ACCESS_KEY_ID: target.accessKeyId,
          AWS_SECRET_ACCESS_KEY: target.secretAccessKey,
        })
      },
      stored: async (key) => {
        const found = await store().read(key)
        return found.status === 'found' ? JSON.parse(found.body) : undefined
      },
      where: (key) => `"${key}" in table ${tableName}`,
    }
  })
})
