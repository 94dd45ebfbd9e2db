import type { DynamoDBClient } from '@aws-sdk/client-dynamodb'
import { afterAll, beforeAll, describe } from 'vitest'
import { historySuite } from '../cli/history-suite.js'
import { dynamodbCliEngine } from '../support/cli-engines.js'
import { freshTable, testDynamoDBClient } from '../support/dynamodb.js'

let client: DynamoDBClient
let tableName: string

beforeAll(async () => {
  client = testDynamoDBClient()
  tableName = await freshTable(client, 'history')
})

afterAll(() => client.destroy())

describe('lambda-singleton history, on DynamoDB Local', () => {
  historySuite(() => dynamodbCliEngine(client, tableName))
})
