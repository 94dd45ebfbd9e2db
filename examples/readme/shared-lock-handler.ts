// The job's handler in every region: the lock's S3 client talks to the lock bucket's region.
import { S3Client } from '@aws-sdk/client-s3'
import middy from '@middy/core'
import { type SingletonContext, singleton } from 'lambda-singleton/middy'
import { S3LockStore } from 'lambda-singleton/s3'

// LAMBDA_SINGLETON_BUCKET and LAMBDA_SINGLETON_KEY come from the construct, LOCK_BUCKET_REGION from the stack.
const store = new S3LockStore({
  bucket: process.env.LAMBDA_SINGLETON_BUCKET ?? 'acme-job-locks',
  s3: new S3Client({ region: process.env.LOCK_BUCKET_REGION, maxAttempts: 1 }), // the lock retries itself
})

export const handler = middy<unknown, unknown, Error, SingletonContext>()
  .use(singleton({ store }))
  .handler(async (_event, context) => ({ token: await context.singleton.fencingToken() }))
