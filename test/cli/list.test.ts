import type { S3Client } from '@aws-sdk/client-s3'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { ExitCode } from '../../lib/cli/main.js'
import { S3Lock, S3LockStore } from '../../lib/s3/index.js'
import { cliIn, WatchingCli } from '../support/cli.js'
import { FaultProxy } from '../support/fault-proxy.js'
import { leaseOf } from '../support/lease-of.js'
import { freshBucket, getRecord, putRaw, testS3Client } from '../support/s3.js'

let s3: S3Client
let bucket: string

beforeAll(async () => {
  s3 = testS3Client()
  bucket = await freshBucket(s3, 'cli-list')
  await leaseOf(new S3Lock({ s3, bucket, key: 'jobs/a-held', owner: 'run/a', ttlMs: 600_000 }).tryAcquire())
  const done = await leaseOf(new S3Lock({ s3, bucket, key: 'jobs/b-free', owner: 'run/b' }).tryAcquire())
  await done?.release()
  await putRaw(s3, bucket, 'jobs/c-corrupt', 'not json')
  await leaseOf(new S3Lock({ s3, bucket, key: 'other/d', owner: 'run/d' }).tryAcquire())
})

afterAll(() => s3.destroy())

const cli = (...argv: string[]) => cliIn(argv, { s3 })
const cells = (line: string | undefined) => line?.split(/\s{2,}/)

describe('lambda-singleton list, on a real S3 engine', () => {
  it('shows every lock under the prefix: holder, token, expiry, last run', async () => {
    const { code, out } = await cli('list', '--bucket', bucket, '--prefix', 'jobs/')
    expect(code).toBe(ExitCode.Ok)
    const lines = out.split('\n')
    const held = await getRecord(s3, bucket, 'jobs/a-held')
    const free = await getRecord(s3, bucket, 'jobs/b-free')
    // A RUN column shows when records count their runs (as this version's acquisitions may or may not).
    const counted = [held, free].some((record) => typeof record.run === 'number')
    const run = (record: Record<string, unknown>) => (counted ? [String(record.run ?? '-')] : [])
    expect(cells(lines[0])).toEqual([
      'KEY',
      'STATE',
      'HOLDER',
      'TOKEN',
      ...(counted ? ['RUN'] : []),
      'EXPIRES',
      'LAST RUN',
    ])
    expect(cells(lines[1])).toEqual([
      'jobs/a-held',
      'held',
      'run/a',
      String(held.token),
      ...run(held),
      expect.stringMatching(/^in (9|10)m/),
      '-',
    ])
    expect(cells(lines[2])).toEqual([
      'jobs/b-free',
      'free',
      'run/b',
      String(free.token),
      ...run(free),
      'released',
      '-',
    ])
    expect(cells(lines[3])?.slice(0, 2)).toEqual(['jobs/c-corrupt', 'unreadable'])
    expect(out).not.toContain('other/d')
    expect(lines.at(-1)).toMatch(/^jobs\/c-corrupt: LockCorruptedError: .*not JSON/)
  })

  it('gives the same locks as JSON with --json', async () => {
    const { code, out } = await cli('list', '--bucket', bucket, '--prefix', 'jobs/', '--json')
    expect(code).toBe(ExitCode.Ok)
    const { prefix, locks } = JSON.parse(out)
    expect(prefix).toBe('jobs/')
    expect(locks.map((lock: { key: string }) => lock.key)).toEqual([
      'jobs/a-held',
      'jobs/b-free',
      'jobs/c-corrupt',
    ])
    expect(locks[0]).toMatchObject({ held: true, owner: 'run/a', released: false })
    expect(locks[0].expiresInMs).toBeGreaterThan(500_000)
    expect(locks[1]).toMatchObject({ held: false, owner: 'run/b', released: true })
    expect(locks[2]).toMatchObject({ error: { name: 'LockCorruptedError' } })
  })

  it('shows a run column with the records that count their runs', async () => {
    const record = { v: 1, token: 12, expires_at: 0, owner: 'run/e', run: 3, last_run: 'tick-3' }
    await putRaw(s3, bucket, 'counted/e', JSON.stringify(record))
    const lines = (await cli('list', '--bucket', bucket, '--prefix', 'counted/')).out.split('\n')
    expect(cells(lines[0])).toEqual(['KEY', 'STATE', 'HOLDER', 'TOKEN', 'RUN', 'EXPIRES', 'LAST RUN'])
    expect(cells(lines[1])).toEqual(['counted/e', 'free', 'run/e', '12', '3', 'released', 'tick-3'])
  })

  it('says so when there is no lock under the prefix', async () => {
    expect(await cli('list', '--bucket', bucket, '--prefix', 'nothing/')).toEqual({
      code: ExitCode.Ok,
      out: `no locks under s3://${bucket}/nothing/`,
      err: '',
    })
  })

  it('fails naming the bucket that does not exist', async () => {
    const { code, err } = await cli('list', '--bucket', `${bucket}-missing`)
    expect(code).toBe(ExitCode.Failure)
    expect(err).toMatch(/LockStoreError: S3 ListObjectsV2 of s3:\/\/.*-missing\/\* failed: NoSuchBucket/)
  })

  it('shows a listed lock that S3 refuses to read as unreadable, not as gone', async () => {
    const proxy = new FaultProxy(inject('s3').endpoint)
    const viaProxy = testS3Client({ endpoint: await proxy.start() })
    try {
      proxy.inject('GET', { kind: 'delay', ms: 0 }) // the listing passes
      proxy.inject('GET', { kind: 'status', status: 403, code: 'AccessDenied' }) // the read does not
      const { code, out } = await cliIn(['list', '--bucket', bucket, '--prefix', 'jobs/a-held', '--json'], {
        s3: viaProxy,
      })
      expect(code).toBe(ExitCode.Ok)
      expect(JSON.parse(out).locks).toEqual([
        {
          key: 'jobs/a-held',
          error: { name: 'AccessDenied', message: 'listed, but S3 answered 403 to reading it' },
        },
      ])
    } finally {
      viaProxy.destroy()
      await proxy.stop()
    }
  })

  it("follows the listing across pages: the store's own listKeys", async () => {
    expect(await new S3LockStore({ s3, bucket }).listKeys('jobs/', { pageSize: 1 })).toEqual([
      'jobs/a-held',
      'jobs/b-free',
      'jobs/c-corrupt',
    ])
  })
})

describe('lambda-singleton watch, on a real S3 engine', () => {
  it('shows the locks again every interval, with new ones, until interrupted', async () => {
    await leaseOf(new S3Lock({ s3, bucket, key: 'watched/old', owner: 'early' }).tryAcquire())
    const watch = new WatchingCli(
      ['watch', '--bucket', bucket, '--prefix', 'watched/', '--interval', '0.2'],
      { s3 },
    )
    const first = await watch.waitFor(/./)
    expect(first).toMatch(
      new RegExp(
        `^s3://${bucket}/watched/\\*: 1 lock, .* by the store's clock; every 0.2s, Ctrl-C to stop\n`,
      ),
    )
    expect(first).toMatch(/\nwatched\/old +held +early /)
    await leaseOf(new S3Lock({ s3, bucket, key: 'watched/new', owner: 'late' }).tryAcquire())
    expect(await watch.waitFor(/watched\/new/)).toMatch(/: 2 locks,[\s\S]*\nwatched\/new +held +late /)
    expect(await watch.stop()).toBe(ExitCode.Ok)
    const count = watch.frames.length
    await new Promise((resolve) => setTimeout(resolve, 600))
    expect(watch.frames).toHaveLength(count)
    expect(watch.errors).toEqual([])
  })

  it('redraws in place on a terminal', async () => {
    const watch = new WatchingCli(['watch', '--bucket', bucket, '--prefix', 'watched/'], { s3, redraw: true })
    const frame = await watch.waitFor(/watched\/old/)
    expect(frame.startsWith(`\u001b[H\u001b[2Js3://${bucket}/watched/*:`)).toBe(true)
    expect(await watch.stop()).toBe(ExitCode.Ok)
  })

  it('reports a failed refresh and goes on, but ends on a failure of the first', async () => {
    const proxy = new FaultProxy(inject('s3').endpoint)
    const viaProxy = testS3Client({ endpoint: await proxy.start() })
    // The fault goes in just after a frame, so that it meets the next listing, a second later.
    const args = ['watch', '--bucket', bucket, '--prefix', 'watched/', '--interval', '1']
    try {
      proxy.inject('GET', { kind: 'status', status: 403, code: 'AccessDenied' })
      expect(await cliIn(args, { s3: viaProxy })).toMatchObject({
        code: ExitCode.Failure,
        err: expect.stringMatching(/^LockStoreError: S3 ListObjectsV2 .* failed: AccessDenied/),
      })
      const watch = new WatchingCli(args, { s3: viaProxy })
      await watch.waitFor(/watched\/old/)
      const shown = watch.frames.length
      proxy.inject('GET', { kind: 'status', status: 403, code: 'AccessDenied' })
      await watch.waitFor(/watched\/old/, shown)
      expect(await watch.stop()).toBe(ExitCode.Ok)
      expect(watch.errors).toEqual([
        expect.stringMatching(
          /^refresh failed, trying again in 1s: LockStoreError: S3 ListObjectsV2 .* AccessDenied/,
        ),
      ])
    } finally {
      viaProxy.destroy()
      await proxy.stop()
    }
  })
})
