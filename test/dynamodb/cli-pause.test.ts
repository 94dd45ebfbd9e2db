import type { DynamoDBClient } from '@aws-sdk/client-dynamodb'
import { afterAll, beforeAll, describe } from 'vitest'
import { pauseSuite } from '../cli/pause-suite.js'
import { dynamodbCliEngine } from '../support/cli-engines.js'
import { freshTable, testDynamoDBClient } from '../support/dynamodb.js'

let client: DynamoDBClient
let tableName: string

beforeAll(async () => {
  client = testDynamoDBClient()
  tableName = await freshTable(client, 'pause')
})

afterAll(() => client.destroy())

describe('lambda-singleton pause and resume, on DynamoDB Local', () => {
  pauseSuite(() => dynamodbCliEngine(client, tableName))
})
