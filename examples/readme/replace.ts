// A job whose newest tick matters most: a run still going when the next tick comes is replaced.
import { S3Client } from '@aws-sdk/client-s3'
import middy from '@middy/core'
import { type SingletonContext, type SkipResult, singleton } from 'lambda-singleton/middy'
import { fencedPut } from 'lambda-singleton/s3'

const s3 = new S3Client({})
const BUCKET = process.env.PRICES_BUCKET ?? 'my-prices-bucket'

async function refreshPrices(_event: unknown, context: SingletonContext) {
  const { signal } = context.singleton
  const token = await context.singleton.fencingToken({ signal })
  for (let page = 0; page < 20; page++) {
    // Replaced by a newer tick's run: signal aborts with a LockLostError, reason 'replaced'.
    signal.throwIfAborted()
    const body = JSON.stringify({ page, token })
    // Refused (FencedWriteRejectedError) once the newer run has written here: stale prices never win.
    await fencedPut({ s3, bucket: BUCKET, key: `prices/page-${page}.json`, body, token, signal })
  }
  return { pages: 20, token }
}

export const handler = middy<
  unknown,
  Awaited<ReturnType<typeof refreshPrices>> | SkipResult,
  Error,
  SingletonContext
>()
  .use(
    singleton({
      onHeld: 'replace', // a newer tick takes the lock from the run still going
      ttlMs: 15_000, // renewed every 5 s: the replaced run hears of it within 5 s and a round trip
    }),
  )
  .handler(refreshPrices)
