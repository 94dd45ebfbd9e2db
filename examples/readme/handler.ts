// A scheduled job behind singleton(): at most one run at a time, fenced output, resumable.
import { S3Client } from '@aws-sdk/client-s3'
import middy from '@middy/core'
import { type SingletonContext, type SkipResult, singleton } from 'lambda-singleton/middy'
import { fencedPut } from 'lambda-singleton/s3'

const s3 = new S3Client({})
const OUTPUT_BUCKET = process.env.OUTPUT_BUCKET ?? 'my-output-bucket'

/** A checkpoint: how far this tick's work got. Cleared when a run completes. */
interface Progress {
  readonly done: number
}

async function compact(_event: unknown, context: SingletonContext) {
  const { signal, checkpoint, saveCheckpoint } = context.singleton
  // `checkpoint` is what a run that failed midway saved (a retry resumes there); after a run
  // that completed it is undefined, so every tick starts from part 0.
  let done = (checkpoint as Progress | undefined)?.done ?? 0
  for (; done < 10; done++) {
    signal.throwIfAborted() // the lease was lost: stop, someone else runs now
    // Given the lease, fencedPut awaits the run's fencing token (at the first call, if at all).
    const part = { s3, bucket: OUTPUT_BUCKET, key: `parts/${done}`, body: `part ${done}` }
    await fencedPut({ ...part, lease: context.singleton })
    await saveCheckpoint({ done: done + 1 } satisfies Progress)
  }
  return { parts: done, token: await context.singleton.fencingToken() } // ready: fencedPut waited for it
}

export const handler = middy<
  unknown,
  Awaited<ReturnType<typeof compact>> | SkipResult,
  Error,
  SingletonContext
>()
  .use(singleton()) // the bucket and the lock key come from the environment the constructs set
  .handler(compact)
