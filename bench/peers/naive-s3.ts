/**
 * The S3 lock one writes in an afternoon, as a baseline: read the lock object, judge its expiry
 * by the local clock, then write it with `If-None-Match: *` (absent) or `If-Match: <etag>`
 * (expired or released); release is a conditional write of an expired record. It has no
 * fencing token, no per-tick dedupe, no renewal, and trusts every clock to agree.
 */
import { GetObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3'
import { countRequests } from '../../test/support/requests.js'
import type { S3Engine } from '../engines.js'
import { S3_PRICES } from '../prices.js'
import { type Container, type Contender, type Invocation, Outcome } from './contender.js'

interface NaiveRecord {
  readonly owner: string
  /** Epoch milliseconds by the writer's clock; 0 once released. */
  readonly expires_at: number
}

/** Ceph 16 wants the etag bare in `If-Match` (AWS S3 takes it quoted as well). */
const bare = (etag: string) => etag.replace(/^"(.*)"$/, '$1')

const status = (error: unknown) =>
  (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode

export class NaiveS3Lock {
  constructor(
    private readonly s3: S3Client,
    private readonly bucket: string,
  ) {}

  /** The etag of our write when the lock was taken; undefined when it is held or we lost a race. */
  async tryAcquire(key: string, owner: string, ttlMs: number): Promise<string | undefined> {
    let etag: string | undefined
    try {
      const current = await this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }))
      const record = JSON.parse((await current.Body?.transformToString()) ?? '{}') as NaiveRecord
      if (record.expires_at > Date.now()) return undefined
      etag = current.ETag
    } catch (error) {
      if (status(error) !== 404) throw error
    }
    const record: NaiveRecord = { owner, expires_at: Date.now() + ttlMs }
    return this.put(key, record, etag)
  }

  async release(key: string, owner: string, etag: string): Promise<void> {
    await this.put(key, { owner, expires_at: 0 }, etag) // undefined: it had been taken over
  }

  private async put(key: string, record: NaiveRecord, etag: string | undefined) {
    try {
      const written = await this.s3.send(
        new PutObjectCommand({
          Bucket: this.bucket,
          Key: key,
          Body: JSON.stringify(record),
          ...(etag === undefined ? { IfNoneMatch: '*' } : { IfMatch: bare(etag) }),
        }),
      )
      return written.ETag
    } catch (error) {
      // 412: another writer got there first; 409: a concurrent conditional write on the key.
      if (status(error) === 412 || status(error) === 409) return undefined
      throw error
    }
  }
}

export function naiveS3Lock(engine: S3Engine): Contender {
  return {
    name: 'naive GET + PUT If-Match, S3',
    engine: 'S3',
    pricePerMillion: S3_PRICES,
    container: () => {
      const s3 = engine.client()
      const lock = new NaiveS3Lock(s3, engine.bucket)
      return {
        requests: countRequests(s3),
        close: () => s3.destroy(),
        async invoke(invocation: Invocation): Promise<Outcome> {
          const key = `naive/${invocation.job}`
          const owner = `${invocation.job}/${invocation.event.scheduledTime}`
          // The lease covers the invocation, as lambda-singleton's does by default.
          const etag = await lock.tryAcquire(key, owner, invocation.remainingMs)
          if (etag === undefined) return Outcome.SkippedHeld
          try {
            await invocation.work()
          } finally {
            await lock.release(key, owner, etag)
          }
          return Outcome.Ran
        },
      } satisfies Container
    },
    close: async () => {},
  }
}
