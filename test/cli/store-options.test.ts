import type { S3Client } from '@aws-sdk/client-s3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ExitCode } from '../../lib/cli/main.js'
import { S3Lock } from '../../lib/s3/index.js'
import { cliIn } from '../support/cli.js'
import { leaseOf } from '../support/lease-of.js'
import { freshBucket, getRecord, testS3Client } from '../support/s3.js'

let s3: S3Client
let bucket: string

beforeAll(async () => {
  s3 = testS3Client()
  bucket = await freshBucket(s3, 'cli-store-options')
})

afterAll(() => s3.destroy())

const cli = (...argv: string[]) => cliIn(argv, { s3 })
const at = (key: string) => ['--bucket', bucket, '--key', key]
const acquire = (key: string) =>
  leaseOf(new S3Lock({ s3, bucket, key, owner: 'job/1', ttlMs: 600_000 }).tryAcquire())

describe('the store options of the command line, on a real S3 engine', () => {
  it("gives the store --request-timeout as its requestTimeoutMs: 1 ms fails a read, as the store's failure", async () => {
    await acquire('locks/timeout')
    const { code, out, err } = await cli('inspect', ...at('locks/timeout'), '--request-timeout', '0.001')
    expect({ code, out }).toEqual({ code: ExitCode.Failure, out: '' })
    expect(err).toMatch(/^LockStoreError: .*S3 GetObject on .* failed: request timed out$/)
    expect(await cli('inspect', ...at('locks/timeout'), '--request-timeout', '10')).toMatchObject({
      code: ExitCode.Ok,
    })
  })

  it('gives the S3 store --etag-quoting as its etagQuoting: forced quoted, a write this engine refuses is refused', async () => {
    await acquire('locks/quoting')
    const read = await cli('inspect', ...at('locks/quoting'), '--etag-quoting', 'quoted')
    expect(read.code).toBe(ExitCode.Ok)
    expect(read.out).toMatch(/^state +held$/m)
    const before = await getRecord(s3, bucket, 'locks/quoting')
    // Ceph RGW, the project's engine, answers 412 to a quoted If-Match (lib/s3/etag.ts): forced,
    // the write is refused and nothing is written; auto would have learned to send it bare. An
    // engine given in S3_ENDPOINT that takes both forms releases the lock instead.
    const quoted = await cli('force-release', ...at('locks/quoting'), '--etag-quoting', 'quoted')
    if (quoted.code === ExitCode.Ok) {
      expect(process.env.S3_ENDPOINT).toBeDefined()
      return
    }
    expect(quoted).toMatchObject({ code: ExitCode.Refused, out: '' })
    expect(await getRecord(s3, bucket, 'locks/quoting')).toEqual(before)
    const unquoted = await cli('force-release', ...at('locks/quoting'), '--etag-quoting', 'unquoted')
    expect(unquoted).toMatchObject({ code: ExitCode.Ok, err: '' })
    const after = await getRecord(s3, bucket, 'locks/quoting')
    expect(after.token).toBeGreaterThan(Number(before.token))
    expect(after).toMatchObject({ expires_at: 0, ended_by: { action: 'force-release', owner: 'job/1' } })
  })
})
