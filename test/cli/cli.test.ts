import { S3Client } from '@aws-sdk/client-s3'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { ExitCode } from '../../lib/cli/main.js'
import { LockLostError } from '../../lib/index.js'
import { S3Lock } from '../../lib/s3/index.js'
import { cliIn } from '../support/cli.js'
import { leaseOf } from '../support/lease-of.js'
import { operatorFor } from '../support/operator-for.js'
import { freshBucket, getRaw, getRecord, putRaw, testS3Client } from '../support/s3.js'

let s3: S3Client
let bucket: string

beforeAll(async () => {
  s3 = testS3Client()
  bucket = await freshBucket(s3, 'cli')
})

afterAll(() => s3.destroy())

const cli = (...argv: string[]) => cliIn(argv, { s3 })
const at = (key: string) => ['--bucket', bucket, '--key', key]
const acquire = (key: string, options: { owner?: string; ttlMs?: number } = {}) =>
  leaseOf(new S3Lock({ s3, bucket, key, ...options }).tryAcquire())

/**
 * A client for the command that runs `meanwhile` before its `nth` request of `command` is sent
 * (another process writing between the command's steps); `sent` counts those requests.
 */
function clientWith(command: string, nth: number, meanwhile: () => Promise<unknown>) {
  const client = testS3Client()
  const counted = { sent: 0 }
  client.middlewareStack.add(
    (send, context) => async (args) => {
      if (context.commandName === command && ++counted.sent === nth) await meanwhile()
      return send(args)
    },
    { step: 'initialize' },
  )
  return Object.assign(client, { counted })
}

describe('lambda-singleton inspect, on a real S3 engine', () => {
  it('prints a held lock as a table of fields, writing nothing', async () => {
    await acquire('locks/inspect', { owner: 'job/1', ttlMs: 600_000 })
    const before = await getRaw(s3, bucket, 'locks/inspect')
    const { code, out } = await cli('inspect', ...at('locks/inspect'))
    expect(code).toBe(ExitCode.Ok)
    const stored = await getRecord(s3, bucket, 'locks/inspect')
    expect(out).toMatch(/^key +locks\/inspect$/m)
    expect(out).toMatch(/^state +held$/m)
    expect(out).toMatch(/^holder +job\/1$/m)
    expect(out).toMatch(new RegExp(`^token +${stored.token}$`, 'm'))
    expect(out).toMatch(/^expires +in (9|10)m \d\ds$/m)
    expect(await getRaw(s3, bucket, 'locks/inspect')).toEqual(before)
  })

  it('prints it as JSON with --json, expiry by the store clock', async () => {
    const { code, out } = await cli('inspect', ...at('locks/inspect'), '--json')
    expect(code).toBe(ExitCode.Ok)
    const shown = JSON.parse(out)
    const stored = await getRecord(s3, bucket, 'locks/inspect')
    expect(shown).toMatchObject({ key: 'locks/inspect', held: true, owner: 'job/1', token: stored.token })
    expect(shown.record).toEqual(stored)
    expect(shown.expiresInMs).toBeGreaterThan(500_000)
    expect(shown.expiresInMs).toBeLessThanOrEqual(601_000)
  })

  it('says plainly that there is no lock, with its own exit code', async () => {
    expect(await cli('inspect', ...at('locks/none'))).toEqual({
      code: ExitCode.NotFound,
      out: '',
      err: `LockNotFoundError: no lock at s3://${bucket}/locks/none`,
    })
    const json = await cli('inspect', ...at('locks/none'), '--json')
    expect(json).toMatchObject({ code: ExitCode.NotFound, out: '' })
    expect(JSON.parse(json.err)).toEqual({
      error: { name: 'LockNotFoundError', message: `no lock at s3://${bucket}/locks/none`, exitCode: 3 },
    })
  })

  it('suggests the key under locks/, where the handlers keep their locks, for a key without it', async () => {
    await acquire('locks/nightly-report', { ttlMs: 600_000 })
    expect(await cli('inspect', ...at('nightly-report'))).toEqual({
      code: ExitCode.NotFound,
      out: '',
      err:
        `LockNotFoundError: no lock at s3://${bucket}/nightly-report; ` +
        'the handlers lock locks/<function name> by default: try --key locks/nightly-report',
    })
  })

  it('shows a released lock in JSON with no expiry (not the epoch), as the text says "released"', async () => {
    await (await acquire('locks/done', { owner: 'done-run' }))?.release()
    const text = await cli('inspect', ...at('locks/done'))
    expect(text.out).toMatch(/^expires\s+released$/m)
    const shown = JSON.parse((await cli('inspect', ...at('locks/done'), '--json')).out)
    expect(shown).toMatchObject({ key: 'locks/done', held: false, released: true, expiresAt: null })
    expect(shown).not.toHaveProperty('expiresInMs')
  })

  it('tells refused credentials from a missing lock, though S3 answers 403 to both', async () => {
    const target = inject('s3')
    const stranger = new S3Client({
      endpoint: target.endpoint,
      region: target.region,
      forcePathStyle: true,
      credentials: { accessKeyId: 'nobody', secretAccessKey: 'wrong' },
    })
    const { code, err } = await cliIn(['inspect', ...at('locks/inspect')], { s3: stranger })
    const json = await cliIn(['inspect', ...at('locks/inspect'), '--json'], { s3: stranger })
    stranger.destroy()
    expect(code).toBe(ExitCode.Configuration)
    expect(err).toMatch(/^ConfigurationError: the AWS credentials were refused \(InvalidAccessKeyId\)/)
    expect(JSON.parse(json.err)).toMatchObject({ error: { name: 'ConfigurationError', exitCode: 6 } })
  })
})

describe('lambda-singleton force-release, on a real S3 engine', () => {
  it('frees a held lock and raises its token, fencing off the old holder', async () => {
    const stuck = await acquire('locks/stuck', { ttlMs: 600_000, owner: 'stuck-run' })
    const { code, out } = await cli('force-release', ...at('locks/stuck'), '--owner', 'alice')
    expect(code).toBe(ExitCode.Ok)
    const record = await getRecord(s3, bucket, 'locks/stuck')
    expect(record).toMatchObject({ expires_at: 0, owner: 'force-released by alice' })
    expect(record.token).toBeGreaterThan(stuck?.record.token ?? Number.POSITIVE_INFINITY)
    expect(out).toBe(
      `released s3://${bucket}/locks/stuck: token ${stuck?.record.token} -> ${record.token}; the holder stuck-run is fenced off`,
    )
    await expect(stuck?.release()).rejects.toBeInstanceOf(LockLostError)
    expect((await acquire('locks/stuck'))?.record.token).toBeGreaterThan(record.token as number)
  })

  it('ends only the lease it judged: a run that took the lock between its read and its write keeps it', async () => {
    const key = 'locks/judged'
    const stuck = await acquire(key, { ttlMs: 600_000, owner: 'stuck-run' })
    // Between the command's look at the lock and its write, another operator frees it and a new run takes it.
    const runs: Awaited<ReturnType<typeof acquire>>[] = []
    const client = clientWith('GetObjectCommand', 2, async () => {
      await operatorFor(new S3Lock({ s3, bucket, key, owner: 'bob' })).forceRelease()
      runs.push(await acquire(key, { ttlMs: 600_000, owner: 'job/2' }))
    })
    const { code, err } = await cliIn(['force-release', ...at(key), '--owner', 'alice'], { s3: client })
    client.destroy()
    const [next] = runs
    expect(code).toBe(ExitCode.Refused)
    expect(err).toMatch(
      /the lease it judged \(token \d+ of stuck-run\) is over: job\/2 holds token \d+ now; nothing was written/,
    )
    expect(await getRecord(s3, bucket, key)).toMatchObject({ owner: 'job/2', token: next?.record.token })
    await expect(next?.renew()).resolves.toBeUndefined()
    await expect(stuck?.renew()).rejects.toMatchObject({ reason: 'released-by-operator' })
  })

  it('ends the lease it judged though its stuck holder renews between the look and the write', async () => {
    const key = 'locks/renewing'
    const stuck = await acquire(key, { ttlMs: 600_000, owner: 'stuck-run' })
    const client = clientWith('GetObjectCommand', 2, async () => stuck?.renew())
    const { code, out } = await cliIn(['force-release', ...at(key), '--owner', 'alice'], { s3: client })
    client.destroy()
    expect(client.counted.sent).toBe(2)
    expect(code).toBe(ExitCode.Ok)
    expect(out).toMatch(/the holder stuck-run is fenced off$/)
    expect(await getRecord(s3, bucket, key)).toMatchObject({
      expires_at: 0,
      ended_by: { token: stuck?.record.token, owner: 'stuck-run', by: 'alice', action: 'force-release' },
    })
    await expect(stuck?.renew()).rejects.toMatchObject({ reason: 'released-by-operator' })
  })

  it('leaves a released lock alone and says so, unless --force', async () => {
    await acquire('locks/free', { owner: 'done-run' }).then((lease) => lease?.release())
    const before = await getRaw(s3, bucket, 'locks/free')
    const refused = await cli('force-release', ...at('locks/free'))
    expect(refused.code).toBe(ExitCode.Refused)
    expect(refused.err).toMatch(
      /^NotHeldError: s3:\/\/.*\/locks\/free is not held \(released, token \d+, last holder done-run\); nothing changed/,
    )
    expect(await getRaw(s3, bucket, 'locks/free')).toEqual(before)

    const forced = await cli('force-release', ...at('locks/free'), '--force', '--json')
    expect(forced.code).toBe(ExitCode.Ok)
    const shown = JSON.parse(forced.out)
    expect(shown).toMatchObject({ key: 'locks/free', released: true, previousOwner: 'done-run' })
    expect(shown.record).toEqual(await getRecord(s3, bucket, 'locks/free'))
    expect(shown.record.token).toBeGreaterThan(JSON.parse(before.body).token)
  })

  it('leaves an expired lock alone too, unless --force', async () => {
    const expired = JSON.stringify({
      v: 1,
      token: 7,
      expires_at: Date.now() / 1000 - 3_600,
      owner: 'crashed',
    })
    await putRaw(s3, bucket, 'locks/expired', expired)
    const refused = await cli('force-release', ...at('locks/expired'))
    expect(refused).toMatchObject({
      code: ExitCode.Refused,
      err: expect.stringMatching(
        /not held \(expired (59m \d\ds|1h 0\dm) ago, token 7, last holder crashed\)/,
      ),
    })
    expect((await getRaw(s3, bucket, 'locks/expired')).body).toBe(expired)
  })

  it('creates nothing where there is no lock', async () => {
    expect(await cli('force-release', ...at('locks/never'))).toMatchObject({ code: ExitCode.NotFound })
    await expect(getRaw(s3, bucket, 'locks/never')).rejects.toMatchObject({ name: 'NoSuchKey' })
  })
})

describe('lambda-singleton pause --now, on a real S3 engine', () => {
  it('ends the lease it read though its holder renews just before the write lands', async () => {
    const key = 'locks/pause-renewing'
    const stuck = await acquire(key, { ttlMs: 600_000, owner: 'stuck-run' })
    const client = clientWith('PutObjectCommand', 1, async () => stuck?.renew())
    const paused = await cliIn(['pause', ...at(key), '--now', '--owner', 'alice'], { s3: client })
    client.destroy()
    expect(client.counted.sent).toBe(2) // refused over the renewal, then written over it
    expect(paused).toMatchObject({ code: ExitCode.Ok, err: '' })
    expect(await getRecord(s3, bucket, key)).toMatchObject({
      paused: { by: 'alice' },
      ended_by: { token: stuck?.record.token, owner: 'stuck-run', by: 'alice', action: 'pause' },
    })
    await expect(stuck?.renew()).rejects.toMatchObject({ reason: 'released-by-operator' })
  })
})

describe('lambda-singleton reset, on a real S3 engine', () => {
  it('shows a corrupted object, and replaces it only when forced, with the token given', async () => {
    await putRaw(s3, bucket, 'locks/corrupt', 'not json')
    const refused = await cli('inspect', ...at('locks/corrupt'))
    expect(refused.code).toBe(ExitCode.Corrupted)
    expect(refused.err).toMatch(/LockCorruptedError[\s\S]*raw object: not json[\s\S]*help reset/)
    expect((await cli('reset', ...at('locks/corrupt'))).code).toBe(ExitCode.Usage)
    const unforced = await cli('reset', ...at('locks/corrupt'), '--token', '500')
    expect(unforced).toMatchObject({
      code: ExitCode.Refused,
      err: expect.stringMatching(/LockConflictError: .*without force/),
    })
    expect((await getRaw(s3, bucket, 'locks/corrupt')).body).toBe('not json')
    const forced = await cli('reset', ...at('locks/corrupt'), '--token', '500', '--force')
    expect(forced).toMatchObject({
      code: ExitCode.Ok,
      out: `reset s3://${bucket}/locks/corrupt: released, token 500`,
    })
    expect((await acquire('locks/corrupt'))?.record.token).toBeGreaterThan(500)
  })

  it('refuses a token in any form but plain decimal digits, writing nothing', async () => {
    await putRaw(s3, bucket, 'locks/exponent', 'not json')
    for (const token of ['1e3', '0x3e8', '1000.0', '+1000']) {
      const { code, err } = await cli('reset', ...at('locks/exponent'), '--token', token, '--force')
      expect(code).toBe(ExitCode.Usage)
      expect(err).toMatch(/--token must be a plain decimal integer/)
    }
    expect((await getRaw(s3, bucket, 'locks/exponent')).body).toBe('not json')
  })

  it('refuses a reset token that would leave no safe token above it, writing nothing', async () => {
    await acquire('locks/last-token', { owner: 'job/3' }).then((lease) => lease?.release())
    const before = await getRaw(s3, bucket, 'locks/last-token')
    const { code, err } = await cli(
      'reset',
      ...at('locks/last-token'),
      '--token',
      String(Number.MAX_SAFE_INTEGER),
    )
    expect(code).toBe(ExitCode.Usage)
    expect(err).toMatch(/LockOptionsError: reset token must be an integer from 0 to 9007199254740990/)
    expect(await getRaw(s3, bucket, 'locks/last-token')).toEqual(before)
  })

  it('refuses to reset a held record of an unknown version, or below a token written as a string', async () => {
    const future = JSON.stringify({ v: 3, token: 5, expires_at: Date.now() / 1000 + 3600, owner: 'newer' })
    await putRaw(s3, bucket, 'locks/newer', future)
    expect(await cli('reset', ...at('locks/newer'), '--token', '9')).toMatchObject({
      code: ExitCode.Refused,
      err: expect.stringMatching(/LockConflictError: .*without force/),
    })
    expect((await getRaw(s3, bucket, 'locks/newer')).body).toBe(future)
    const stringToken = JSON.stringify({ v: 1, token: '5', expires_at: 0, owner: 'x' })
    await putRaw(s3, bucket, 'locks/string-token', stringToken)
    const low = await cli('reset', ...at('locks/string-token'), '--token', '1', '--force')
    expect(low).toMatchObject({ code: ExitCode.Refused, err: expect.stringMatching(/above the token 5/) })
    expect((await getRaw(s3, bucket, 'locks/string-token')).body).toBe(stringToken)
  })
})

describe('a lock whose token an outside write put ahead of the store clock, on a real S3 engine', () => {
  const key = 'locks/ahead'
  const ahead = Date.now() + 3_600_000
  const outside = JSON.stringify({ v: 1, token: ahead, expires_at: 0, owner: 'script' })
  beforeAll(() => putRaw(s3, bucket, key, outside))

  it('is shown blocked by inspect, and force-release refuses it (exit 4), naming the repair, writing nothing', async () => {
    const shown = await cli('inspect', ...at(key))
    expect(shown.out).toMatch(/^state +free, blocked \(record-ahead-of-clock\)$/m)
    expect(JSON.parse((await cli('inspect', ...at(key), '--json')).out)).toMatchObject({
      blocked: 'record-ahead-of-clock',
    })
    const refused = await cli('force-release', ...at(key), '--force')
    expect(refused.code).toBe(ExitCode.Refused)
    expect(refused.err).toMatch(
      /^LockConflictError: Lock "locks\/ahead": the token \d+ is more than 10 s ahead/,
    )
    expect(refused.err).toMatch(/lambda-singleton reset .*--key locks\/ahead --back-to-clock/)
    const json = await cli('force-release', ...at(key), '--force', '--json')
    expect(JSON.parse(json.err)).toMatchObject({ error: { name: 'LockConflictError', exitCode: 4 } })
    expect((await getRaw(s3, bucket, key)).body).toBe(outside)
  })

  it('is not lowered by a plain reset (exit 4), only by reset --back-to-clock, which says what it does', async () => {
    const low = await cli('reset', ...at(key), '--token', String(Date.now()))
    expect(low).toMatchObject({
      code: ExitCode.Refused,
      err: expect.stringMatching(/^LockConflictError: .*must be above the current token \d+/),
    })
    expect((await getRaw(s3, bucket, key)).body).toBe(outside)

    const before = Date.now()
    const reset = await cli('reset', ...at(key), '--back-to-clock', '--owner', 'alice')
    const after = Date.now()
    expect(reset.code).toBe(ExitCode.Ok)
    const record = await getRecord(s3, bucket, key)
    expect(record).toEqual({ v: 1, token: record.token, expires_at: 0, owner: 'reset by alice' })
    expect(record.token).toBeGreaterThanOrEqual(before - 1_000)
    expect(record.token).toBeLessThan(after + 1_000) // the store's clock during the reset, to its second
    expect(reset.out).toBe(
      `reset s3://${bucket}/${key}: released, token ${record.token}, back to the store's clock`,
    )
    expect(reset.err).toBe(
      `note: objects that fencedPut wrote with a token above ${record.token} refuse every new holder's ` +
        'write until they are removed or rewritten',
    )
    expect((await acquire(key))?.record.token).toBeGreaterThan(record.token as number)
  })

  it('prints the record reset back to the clock as JSON with --json', async () => {
    await putRaw(s3, bucket, key, outside)
    const { code, out, err } = await cli('reset', ...at(key), '--back-to-clock', '--json')
    expect(code).toBe(ExitCode.Ok)
    expect(err).toBe('')
    expect(JSON.parse(out)).toEqual({ key, backToClock: true, record: await getRecord(s3, bucket, key) })
  })
})
