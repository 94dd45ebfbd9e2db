// A cursor carried across ticks: each tick takes in only the files that arrived since the last.
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3'
import middy from '@middy/core'
import { type SingletonContext, type SkipResult, singleton } from 'lambda-singleton/middy'
import { fencedPut } from 'lambda-singleton/s3'

const s3 = new S3Client({})
const BUCKET = process.env.INBOX_BUCKET ?? 'my-inbox-bucket'

async function ingest(_event: unknown, context: SingletonContext) {
  const { signal, cursor, saveCursor } = context.singleton
  // The last file any earlier run took in, whether that run completed or not.
  const after = typeof cursor === 'string' ? cursor : undefined
  const listed = await s3.send(
    new ListObjectsV2Command({ Bucket: BUCKET, Prefix: 'inbox/', StartAfter: after, MaxKeys: 100 }),
    { abortSignal: signal },
  )
  const files = (listed.Contents ?? []).flatMap((object) => (object.Key ? [object.Key] : []))
  for (const file of files) {
    signal.throwIfAborted() // the lease was lost: stop, someone else runs now
    const done = file.replace(/^inbox\//, 'ingested/')
    await fencedPut({ s3, bucket: BUCKET, key: done, body: `took in ${file}`, lease: context.singleton })
    await saveCursor(file) // kept for every later tick, never cleared
  }
  return { ingested: files.length, token: await context.singleton.fencingToken() }
}

export const handler = middy<
  unknown,
  Awaited<ReturnType<typeof ingest>> | SkipResult,
  Error,
  SingletonContext
>()
  .use(singleton())
  .handler(ingest)
