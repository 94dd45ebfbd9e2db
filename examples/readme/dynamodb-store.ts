// The lock in a DynamoDB table instead of a bucket: the same middleware, tokens and guarantees.
import middy from '@middy/core'
import { DynamoDBLockStore } from 'lambda-singleton/dynamodb'
import { type SingletonContext, singleton } from 'lambda-singleton/middy'

// A function bound to a LockTable needs no `store`: LAMBDA_SINGLETON_TABLE names the table.
// Name one yourself to use a table of yours, with its own key attribute (a string).
const store = new DynamoDBLockStore({ tableName: 'platform-locks', partitionKey: 'lock_id' })

export const handler = middy<unknown, unknown, Error, SingletonContext>()
  .use(singleton({ store }))
  .handler(async (_event, context) => ({ token: await context.singleton.fencingToken() }))
