import type { S3Client } from '@aws-sdk/client-s3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { S3LockStore } from '../../lib/s3/index.js'
import { bundleLikeTheConstruct, invokeBundle } from '../support/bundle.js'
import { s3ProgramEnv } from '../support/cli-engines.js'
import { schedulerEvent } from '../support/lambda-context.js'
import { freshBucket, getRecord, testS3Client } from '../support/s3.js'
import { expectTokenOfStoreTime, storeTime } from '../support/store-time.js'

let s3: S3Client
let bucket: string
let bundle: { path: string; code: string }

beforeAll(async () => {
  s3 = testS3Client()
  bucket = await freshBucket(s3, 'bundle')
  bundle = await bundleLikeTheConstruct('functions/nightly-report.ts', 's3')
}, 60_000)

afterAll(() => s3.destroy())

/** One invocation of the bundle in its own Node process, as Lambda would run it. */
async function invoke(event: unknown, lockBucket = bucket): Promise<unknown> {
  return invokeBundle(bundle.path, event, {
    ...s3ProgramEnv(),
    LAMBDA_SINGLETON_BUCKET: lockBucket,
    DATA_BUCKET: bucket,
  })
}

describe('functions/nightly-report.ts bundled like the construct bundles it', () => {
  it('leaves the DynamoDB store and its SDK out of a bundle for an S3 lock', () => {
    expect(bundle.code).toContain('If-None-Match')
    expect(bundle.code).not.toMatch(/DynamoDB/)
  })

  it('runs in a separate Node process under lambda-local: one of two concurrent runs works, the other skips', async () => {
    const tick = schedulerEvent('2026-11-21T03:00:00Z')
    const now = () => storeTime(new S3LockStore({ s3, bucket }))
    const before = await now()
    const results = await Promise.all([invoke(tick), invoke(tick)])
    const after = await now()
    const ran = results.filter((r) => (r as { skipped?: boolean }).skipped !== true)
    expect(ran).toHaveLength(1)
    expect(ran[0]).toMatchObject({ report: 'reports/2026-11-20.json' })
    const { token } = ran[0] as { token: number }
    expectTokenOfStoreTime(token, before, after)
    expect(results.some((r) => (r as { skipped?: boolean }).skipped === true)).toBe(true)
    // The two processes start at slightly different times: the second finds the lock held, or
    // (if it starts after the first has finished) the tick done. Either way it does not run.
    expect(results.filter((r) => (r as { skipped?: boolean }).skipped === true)).toHaveLength(1)
    const lock = await getRecord(s3, bucket, 'locks/handler')
    expect(lock).toMatchObject({ token, run: 1, expires_at: 0, last_run: '2026-11-21T03:00:00Z' })
    expect(await invoke(tick)).toMatchObject({ skipped: true, reason: 'duplicate' })
  })

  it('names the S3 operation that failed by its API name, which minifying does not mangle', async () => {
    const failed = await invoke({}, `no-such-bucket-${bucket}`).then(
      (result) => new Error(`it ran: ${JSON.stringify(result)}`),
      (error: { stderr?: string }) => error,
    )
    const { stderr } = failed as { stderr?: string }
    expect(stderr).toMatch(/errorType: 'LockStoreError'/)
    expect(stderr).toMatch(
      /errorMessage: 'S3 GetObject on s3:\/\/no-such-bucket-\S+\/locks\/handler failed: NoSuchBucket/,
    )
  })
})
