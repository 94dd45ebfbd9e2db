import { inject } from 'vitest'
import { execSuite } from '../cli/exec-suite.js'
import { freshTable, testDynamoDBClient } from '../support/dynamodb.js'

const client = testDynamoDBClient()
const table = await freshTable(client, 'exec', { partitionKey: 'lock_id' })
client.destroy()

execSuite({
  name: 'DynamoDB (DynamoDB Local)',
  store: () => ['--table', table, '--partition-key', 'lock_id'],
  env: () => {
    const target = inject('dynamodb')
    return {
      AWS_ENDPOINT_URL_DYNAMODB: target.endpoint,
      AWS_REGION: target.region,
      AWS_ACCESS_KEY_ID: target.accessKeyId,
      AWS_SECRET_ACCESS_KEY: target.secretAccessKey,
    }
  },
})
