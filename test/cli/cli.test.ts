import type { S3Client } from '@aws-sdk/client-s3'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { runCli } from '../../lib/cli/main.js'
import { LockLostError } from '../../lib/index.js'
import { S3Lock } from '../../lib/s3/index.js'
import { runCliProgram } from '../support/cli.js'
import { freshBucket, getRaw, getRecord, putRaw, testS3Client } from '../support/s3.js'

let s3: S3Client
let bucket: string

beforeAll(async () => {
  s3 = testS3Client()
  bucket = await freshBucket(s3, 'cli')
})

afterAll(() => s3.destroy())

async function cli(...argv: string[]) {
  const out: string[] = []
  const err: string[] = []
  const code = await runCli(argv, { s3, out: (l) => out.push(l), err: (l) => err.push(l) })
  return { code, out: out.join('\n'), err: err.join('\n') }
}

describe('lambda-singleton CLI on a real S3 engine', () => {
  it('inspects a held lock without writing', async () => {
    const lease = await new S3Lock({ s3, bucket, key: 'locks/inspect', owner: 'job/1' }).tryAcquire()
    const before = await getRaw(s3, bucket, 'locks/inspect')
    const { code, out } = await cli('inspect', '--bucket', bucket, '--key', 'locks/inspect')
    expect(code).toBe(0)
    expect(JSON.parse(out)).toMatchObject({ token: lease?.token, owner: 'job/1', held: true })
    expect(await getRaw(s3, bucket, 'locks/inspect')).toEqual(before)
    expect((await cli('inspect', '--bucket', bucket, '--key', 'locks/none')).code).toBe(1)
  })

  it('force-releases a stuck lock with a higher token, fencing off the old holder', async () => {
    const stuck = await new S3Lock({ s3, bucket, key: 'locks/stuck', ttlMs: 600_000 }).tryAcquire()
    const { code } = await cli(
      'force-release',
      '--bucket',
      bucket,
      '--key',
      'locks/stuck',
      '--owner',
      'alice',
    )
    expect(code).toBe(0)
    const freed = await getRecord(s3, bucket, 'locks/stuck')
    expect(freed).toMatchObject({ expires_at: 0, owner: 'force-released by alice' })
    expect(freed.token).toBeGreaterThan(stuck?.token ?? Number.POSITIVE_INFINITY)
    await expect(stuck?.release()).rejects.toBeInstanceOf(LockLostError)
    const next = await new S3Lock({ s3, bucket, key: 'locks/stuck' }).tryAcquire()
    expect(next?.token).toBeGreaterThan(freed.token as number)
  })

  it('shows a corrupted object and resets it only with an explicit token', async () => {
    await putRaw(s3, bucket, 'locks/corrupt', 'not json')
    const refused = await cli('inspect', '--bucket', bucket, '--key', 'locks/corrupt')
    expect(refused.code).toBe(1)
    expect(refused.err).toMatch(/LockCorruptedError[\s\S]*raw object: not json/)
    expect((await cli('reset', '--bucket', bucket, '--key', 'locks/corrupt')).code).toBe(2)
    const unforced = await cli('reset', '--bucket', bucket, '--key', 'locks/corrupt', '--token', '500')
    expect(unforced).toMatchObject({
      code: 1,
      err: expect.stringMatching(/LockConflictError: .*without force/),
    })
    expect((await getRaw(s3, bucket, 'locks/corrupt')).body).toBe('not json')
    const forced = ['--token', '500', '--force']
    expect((await cli('reset', '--bucket', bucket, '--key', 'locks/corrupt', ...forced)).code).toBe(0)
    expect((await new S3Lock({ s3, bucket, key: 'locks/corrupt' }).tryAcquire())?.token).toBeGreaterThan(500)
  })

  it('refuses a reset token that would leave no safe token above it, writing nothing', async () => {
    const lease = await new S3Lock({ s3, bucket, key: 'locks/last-token', owner: 'job/3' }).tryAcquire()
    await lease?.release()
    const before = await getRaw(s3, bucket, 'locks/last-token')
    const { code, err } = await cli(
      'reset',
      '--bucket',
      bucket,
      '--key',
      'locks/last-token',
      '--token',
      String(Number.MAX_SAFE_INTEGER),
    )
    expect(code).toBe(1)
    expect(err).toMatch(/LockOptionsError: reset token must be an integer from 0 to 9007199254740990/)
    expect(await getRaw(s3, bucket, 'locks/last-token')).toEqual(before)
    const next = await new S3Lock({ s3, bucket, key: 'locks/last-token' }).tryAcquire()
    expect(next?.token).toBeGreaterThan(lease?.token ?? Number.POSITIVE_INFINITY)
  })

  it('refuses to reset a held record of an unknown version, or below a token written as a string', async () => {
    const future = JSON.stringify({ v: 2, token: 5, expires_at: Date.now() / 1000 + 3600, owner: 'newer' })
    await putRaw(s3, bucket, 'locks/newer', future)
    const args = ['reset', '--bucket', bucket, '--key', 'locks/newer']
    expect(await cli(...args, '--token', '9')).toMatchObject({
      code: 1,
      err: expect.stringMatching(/LockConflictError: .*without force/),
    })
    expect((await getRaw(s3, bucket, 'locks/newer')).body).toBe(future)
    const stringToken = JSON.stringify({ v: 1, token: '5', expires_at: 0, owner: 'x' })
    await putRaw(s3, bucket, 'locks/string-token', stringToken)
    const low = await cli(
      'reset',
      '--bucket',
      bucket,
      '--key',
      'locks/string-token',
      '--token',
      '1',
      '--force',
    )
    expect(low).toMatchObject({ code: 1, err: expect.stringMatching(/above the token 5/) })
    expect((await getRaw(s3, bucket, 'locks/string-token')).body).toBe(stringToken)
  })

  it('explains its usage on bad arguments', async () => {
    expect((await cli()).code).toBe(2)
    expect((await cli('inspect', '--bucket', bucket)).err).toMatch(
      /--key and one of --bucket \(S3\) or --table/,
    )
    expect((await cli('inspect', '--bucket', bucket, '--table', 't', '--key', 'k')).code).toBe(2)
    expect((await cli('explode', '--bucket', bucket, '--key', 'k')).err).toMatch(/unknown command "explode"/)
    expect((await cli('inspect', '--nope')).code).toBe(2)
    expect(await cli('--help')).toMatchObject({ code: 0, out: expect.stringMatching(/^usage:/) })
  })

  it('runs as a program', async () => {
    const target = inject('s3')
    const lease = await new S3Lock({ s3, bucket, key: 'locks/program', owner: 'job/2' }).tryAcquire()
    const stdout = await runCliProgram(['inspect', '--bucket', bucket, '--key', 'locks/program'], {
      S3_ENDPOINT: target.endpoint,
      AWS_REGION: target.region,
      AWS_ACCESS_KEY_ID: target.accessKeyId,
      AWS_SECRET_ACCESS_KEY: target.secretAccessKey,
    })
    expect(JSON.parse(stdout)).toMatchObject({ token: lease?.token, owner: 'job/2', held: true })
  })
})
