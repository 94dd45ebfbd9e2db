/**
 * What the store holds once a soak is over, read straight from radosgw (not through the proxy):
 * each lock record's token, and each fenced object's token and the write that put its body there.
 */
import { GetObjectCommand, NoSuchKey, S3Client } from '@aws-sdk/client-s3'
import { FENCING_TOKEN_METADATA } from '../../lib/s3/index.js'
import { lockKeyOf, objectsOf } from './config.js'
import type { EventBody } from './events.js'

async function read(s3: S3Client, bucket: string, key: string) {
  // The engine may still be coming back from a restart: try for a while.
  for (let attempt = 0; ; attempt++) {
    try {
      const out = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }))
      return { body: (await out.Body?.transformToString()) ?? '', metadata: out.Metadata ?? {} }
    } catch (error) {
      if (error instanceof NoSuchKey) return undefined
      if (attempt >= 20) throw error
      await new Promise((resolve) => setTimeout(resolve, 500))
    }
  }
}

export async function readFinalState(
  s3: S3Client,
  bucket: string,
  keys: readonly string[],
  objectsPerKey: number,
): Promise<EventBody[]> {
  const events: EventBody[] = []
  for (const key of keys) {
    const lock = await read(s3, bucket, lockKeyOf(key))
    const record = lock ? (JSON.parse(lock.body) as { token?: number }) : undefined
    events.push({
      type: 'final',
      of: 'lock',
      key,
      object: lockKeyOf(key),
      ...(record && { token: record.token }),
    })
    for (const object of objectsOf(key, objectsPerKey)) {
      const data = await read(s3, bucket, object)
      if (!data) {
        events.push({ type: 'final', of: 'data', key, object })
        continue
      }
      const token = Number(data.metadata[FENCING_TOKEN_METADATA])
      const { write } = JSON.parse(data.body) as { write?: string }
      events.push({ type: 'final', of: 'data', key, object, token, ...(write && { write }) })
    }
  }
  return events
}

export function directClient(endpoint: string): S3Client {
  return new S3Client({ endpoint, forcePathStyle: true, maxAttempts: 3 })
}
