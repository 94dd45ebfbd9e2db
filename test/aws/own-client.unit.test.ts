import { DynamoDBClient } from '@aws-sdk/client-dynamodb'
import { S3Client } from '@aws-sdk/client-s3'
import { describe, expect, it } from 'vitest'
import { DynamoDBLockStore } from '../../lib/dynamodb/index.js'
import { S3LockStore } from '../../lib/s3/index.js'

/** The middlewares a client runs, by name (`loggerMiddleware - initialize` and so on). */
const middlewares = (client: S3Client | DynamoDBClient) =>
  client.middlewareStack.identify().map((entry) => entry.split(' ')[0])

// The SDK's logger middleware filters each call's whole input and output for its logger, and
// does so for the no-op logger a client has by default: for a PutItem of a record with its
// history, that walk is most of the time between the answer and the call's return.
describe('the client a store makes for itself', () => {
  it('leaves out the SDK logger middleware on DynamoDB, where a client you give keeps it', () => {
    expect(middlewares(new DynamoDBLockStore({ tableName: 'locks' }).client)).not.toContain(
      'loggerMiddleware',
    )
    const yours = new DynamoDBClient({ region: 'eu-west-1' })
    expect(middlewares(new DynamoDBLockStore({ tableName: 'locks', client: yours }).client)).toContain(
      'loggerMiddleware',
    )
  })

  it('leaves out the SDK logger middleware on S3, where a client you give keeps it', () => {
    expect(middlewares(new S3LockStore({ bucket: 'locks' }).s3)).not.toContain('loggerMiddleware')
    const yours = new S3Client({ region: 'eu-west-1' })
    expect(middlewares(new S3LockStore({ bucket: 'locks', s3: yours }).s3)).toContain('loggerMiddleware')
  })
})
