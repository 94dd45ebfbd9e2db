import { DynamoDBLockStore } from '../../lib/dynamodb/index.js'
import { describeSingletonOnEngine } from '../middy/engine-suite.js'
import { freshTable, testDynamoDBClient } from '../support/dynamodb.js'
import { countRequests } from '../support/requests.js'

describeSingletonOnEngine('DynamoDB Local', async () => {
  const client = testDynamoDBClient()
  const tableName = await freshTable(client, 'middy')
  return {
    store: () => new DynamoDBLockStore({ client, tableName }),
    counted: () => {
      const counting = testDynamoDBClient()
      return {
        store: new DynamoDBLockStore({ client: counting, tableName }),
        requests: countRequests(counting),
        close: () => counting.destroy(),
      }
    },
    close: () => client.destroy(),
  }
})
