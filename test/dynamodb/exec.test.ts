import { execSuite } from '../cli/exec-suite.js'
import { dynamodbProgramEnv } from '../support/cli-engines.js'
import { freshTable, testDynamoDBClient } from '../support/dynamodb.js'

const client = testDynamoDBClient()
const table = await freshTable(client, 'exec', { partitionKey: 'lock_id' })
client.destroy()

execSuite({
  name: 'DynamoDB (DynamoDB Local)',
  store: () => ['--table', table, '--partition-key', 'lock_id'],
  env: dynamodbProgramEnv,
})
