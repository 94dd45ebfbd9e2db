// The consumer check's S3 job, as a user writes it from the README: Middy, singleton() on the
// default store (LAMBDA_SINGLETON_BUCKET), a fenced write with the user's own S3Client.
import { S3Client } from '@aws-sdk/client-s3'
import middy from '@middy/core'
import { type SingletonContext, type SkipResult, singleton } from 'lambda-singleton/middy'
import { fencedPut } from 'lambda-singleton/s3'

// Made at import, as users do: importing the module must need no environment.
const s3 = new S3Client({})

export const handler = middy<unknown, { token: number } | SkipResult, Error, SingletonContext>()
  .use(singleton({ key: 'consumer-check' }))
  .handler(async (_event, context) => {
    const { signal } = context.singleton
    signal.throwIfAborted()
    const bucket = process.env.OUTPUT_BUCKET ?? ''
    // Given the lease, fencedPut awaits the token; the handler reads the same one for its answer.
    await fencedPut({
      s3,
      bucket,
      key: 'consumer-check/output',
      body: 'the output',
      lease: context.singleton,
    })
    return { token: await context.singleton.fencingToken() }
  })
