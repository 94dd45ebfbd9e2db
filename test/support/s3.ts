import { randomUUID } from 'node:crypto'
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3'
import { inject } from 'vitest'

/** A client for the test endpoint. One attempt per call, like the library's default client. */
export function testS3Client(options: { endpoint?: string; maxAttempts?: number } = {}): S3Client {
  const target = inject('s3')
  return new S3Client({
    endpoint: options.endpoint ?? target.endpoint,
    region: target.region,
    credentials: { accessKeyId: target.accessKeyId, secretAccessKey: target.secretAccessKey },
    forcePathStyle: true,
    maxAttempts: options.maxAttempts ?? 1,
  })
}

/** A new, empty bucket for one test file, so tests never see each other's locks. */
export async function freshBucket(s3: S3Client, label: string): Promise<string> {
  const bucket = `ls-${label}-${randomUUID().slice(0, 8)}`.toLowerCase()
  await s3.send(new CreateBucketCommand({ Bucket: bucket }))
  return bucket
}

/** Reads an object the way an operator would, bypassing the library. */
export async function getRaw(
  s3: S3Client,
  bucket: string,
  key: string,
): Promise<{ body: string; etag: string }> {
  const out = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }))
  return { body: (await out.Body?.transformToString()) ?? '', etag: out.ETag ?? '' }
}

export async function getRecord(s3: S3Client, bucket: string, key: string): Promise<Record<string, unknown>> {
  return JSON.parse((await getRaw(s3, bucket, key)).body) as Record<string, unknown>
}

/** Writes an object unconditionally, as a foreign writer or a careless operator would. */
export async function putRaw(s3: S3Client, bucket: string, key: string, body: string): Promise<void> {
  await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }))
}

export { countRequests } from './requests.js'
