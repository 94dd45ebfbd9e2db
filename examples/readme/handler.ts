// A scheduled job behind singleton(): at most one run at a time, fenced output, resumable.
import { S3Client } from '@aws-sdk/client-s3'
import middy from '@middy/core'
import { type SingletonContext, type SkipResult, singleton } from 'lambda-singleton/middy'
import { fencedPut } from 'lambda-singleton/s3'

const s3 = new S3Client({})
const OUTPUT_BUCKET = process.env.OUTPUT_BUCKET ?? 'my-output-bucket'

interface Progress {
  readonly done: number
}

async function compact(_event: unknown, context: SingletonContext) {
  const { token, signal, state, checkpoint } = context.singleton
  let done = (state as Progress | undefined)?.done ?? 0 // resume where a crashed run stopped
  for (; done < 10; done++) {
    signal.throwIfAborted() // the lease was lost: stop, someone else runs now
    await fencedPut({ s3, bucket: OUTPUT_BUCKET, key: `parts/${done}`, body: `part ${done}`, token })
    await checkpoint({ done: done + 1 } satisfies Progress)
  }
  return { parts: done, token }
}

export const handler = middy<
  unknown,
  Awaited<ReturnType<typeof compact>> | SkipResult,
  Error,
  SingletonContext
>()
  .use(singleton()) // bucket from LAMBDA_SINGLETON_BUCKET, lock key locks/<function name>
  .handler(compact)
