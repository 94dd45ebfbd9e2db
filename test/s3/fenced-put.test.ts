import { HeadObjectCommand, type S3Client } from '@aws-sdk/client-s3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FencedWriteRejectedError, fencedPut, S3Lock } from '../../lib/s3/index.js'
import { freshBucket, getRaw, putRaw, testS3Client } from '../support/s3.js'

let s3: S3Client
let bucket: string

beforeAll(async () => {
  s3 = testS3Client()
  bucket = await freshBucket(s3, 'fenced')
})

afterAll(() => s3.destroy())

describe('fencedPut on a real S3 engine', () => {
  it('refuses a zombie that lost its lease, keeping the newer holder output', async () => {
    const lockKey = 'locks/report'
    const zombie = await new S3Lock({
      s3,
      bucket,
      key: lockKey,
      ttlMs: 1_200,
      clockSkewMarginMs: 100,
    }).tryAcquire()
    await new Promise((resolve) => setTimeout(resolve, 3_600)) // ttl + margins + Date resolution
    const successor = await new S3Lock({ s3, bucket, key: lockKey, clockSkewMarginMs: 100 }).tryAcquire()
    expect(successor?.token).toBe((zombie?.token ?? 0) + 1)

    await fencedPut({ s3, bucket, key: 'out/report.json', body: 'new', token: successor?.token ?? -1 })
    const error = await fencedPut({
      s3,
      bucket,
      key: 'out/report.json',
      body: 'stale',
      token: zombie?.token ?? -1,
    }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(FencedWriteRejectedError)
    expect(error).toMatchObject({ token: 1, currentToken: 2 })
    expect((await getRaw(s3, bucket, 'out/report.json')).body).toBe('new')
  })

  it('stores the token in the object metadata and lets the same token write again', async () => {
    await fencedPut({ s3, bucket, key: 'out/same.json', body: 'a', token: 7 })
    const second = await fencedPut({
      s3,
      bucket,
      key: 'out/same.json',
      body: 'b',
      token: 7,
      metadata: { run: 'x' },
    })
    expect(second.previousToken).toBe(7)
    const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'out/same.json' }))
    expect(head.Metadata).toMatchObject({ 'fencing-token': '7', run: 'x' })
    expect((await getRaw(s3, bucket, 'out/same.json')).body).toBe('b')
  })

  it('fences an object first written without a token', async () => {
    await putRaw(s3, bucket, 'out/legacy.json', 'legacy')
    const result = await fencedPut({ s3, bucket, key: 'out/legacy.json', body: 'fenced', token: 3 })
    expect(result.previousToken).toBeUndefined()
    await expect(
      fencedPut({ s3, bucket, key: 'out/legacy.json', body: 'old', token: 2 }),
    ).rejects.toBeInstanceOf(FencedWriteRejectedError)
  })

  it('never lets a lower token overwrite a higher one among racing writers', async () => {
    const results = await Promise.allSettled(
      ['a', 'b', 'c', 'd'].map((body, i) =>
        fencedPut({ s3, bucket, key: 'out/race.json', body, token: 10 + i }),
      ),
    )
    expect(results.some((r) => r.status === 'fulfilled')).toBe(true)
    const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: 'out/race.json' }))
    // Whatever the interleaving, the stored token is the highest of those that succeeded.
    const succeeded = results.flatMap((r, i) => (r.status === 'fulfilled' ? [10 + i] : []))
    expect(Number(head.Metadata?.['fencing-token'])).toBe(Math.max(...succeeded))
  })
})
