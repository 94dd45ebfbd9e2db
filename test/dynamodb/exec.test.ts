import { execReplaceSuite } from '../cli/exec-replace-suite.js'
import { execSessionSuite } from '../cli/exec-session-suite.js'
import { execSuite } from '../cli/exec-suite.js'
import { execTreeSuite } from '../cli/exec-tree-suite.js'
import { dynamodbProgramEnv } from '../support/cli-engines.js'
import { freshTable, testDynamoDBClient } from '../support/dynamodb.js'

const client = testDynamoDBClient()
const table = await freshTable(client, 'exec', { partitionKey: 'lock_id' })
client.destroy()

const engine = {
  name: 'DynamoDB (DynamoDB Local)',
  store: () => ['--table', table, '--partition-key', 'lock_id'],
  env: dynamodbProgramEnv,
}
execSuite(engine)
execTreeSuite(engine)
execSessionSuite(engine)
execReplaceSuite({ ...engine, fencedTarget: (key) => ['dynamodb', table, 'lock_id', key] })
