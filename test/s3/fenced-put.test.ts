import { type AddressInfo, createServer, type Socket } from 'node:net'
import { DeleteObjectCommand, HeadObjectCommand, type S3Client } from '@aws-sdk/client-s3'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { Lease } from '../../lib/core/lease.js'
import { LockOptionsError } from '../../lib/index.js'
import { FencedWriteRejectedError, fencedPut, S3Lock } from '../../lib/s3/index.js'
import { FaultProxy } from '../support/fault-proxy.js'
import { leaseOf } from '../support/lease-of.js'
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
    const zombie = await leaseOf(
      new S3Lock({
        s3,
        bucket,
        key: lockKey,
        ttlMs: 1_200,
        clockSkewMarginMs: 100,
      }).tryAcquire(),
    )
    expect(zombie).not.toBeNull()
    // The successor polls until the zombie's lease has run out by the engine's clock.
    const successorLock = new S3Lock({ s3, bucket, key: lockKey, clockSkewMarginMs: 100 })
    let successor = await leaseOf(successorLock.tryAcquire())
    while (successor === null) {
      await new Promise((resolve) => setTimeout(resolve, 200))
      successor = await leaseOf(successorLock.tryAcquire())
    }
    expect(successor.record.token).toBeGreaterThan(zombie?.record.token ?? Number.POSITIVE_INFINITY)

    await fencedPut({ s3, bucket, key: 'out/report.json', body: 'new', token: successor?.record.token ?? -1 })
    const error = await fencedPut({
      s3,
      bucket,
      key: 'out/report.json',
      body: 'stale',
      token: zombie?.record.token ?? -1,
    }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(FencedWriteRejectedError)
    expect(error).toMatchObject({ token: zombie?.record.token, currentToken: successor?.record.token })
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
  it("ends with the highest token's body among 20 concurrent writers, every other writer written or fenced off, 6 rounds", async () => {
    const writers = 20
    for (let round = 0; round < 6; round++) {
      const key = `out/stampede-${round}.json`
      const results = await Promise.allSettled(
        Array.from({ length: writers }, (_, i) =>
          fencedPut({ s3, bucket, key, body: `written by ${i + 1}`, token: i + 1 }),
        ),
      )
      const failures = results.flatMap((r) => (r.status === 'rejected' ? [r.reason] : []))
      for (const failure of failures)
        expect(failure, String(failure)).toBeInstanceOf(FencedWriteRejectedError)
      expect(results[writers - 1]?.status, 'the highest token').toBe('fulfilled')
      expect((await getRaw(s3, bucket, key)).body).toBe(`written by ${writers}`)
      const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }))
      expect(head.Metadata?.['fencing-token']).toBe(String(writers))
    }
  })
  it('keeps trying through transient S3 failures of its writes', async () => {
    const proxy = new FaultProxy(inject('s3').endpoint)
    const viaProxy = testS3Client({ endpoint: await proxy.start() })
    try {
      proxy.inject('PUT', { kind: 'status', status: 500, code: 'InternalError' }, 3)
      proxy.inject('HEAD', { kind: 'reset' })
      const result = await fencedPut({
        s3: viaProxy,
        bucket,
        key: 'out/flaky.json',
        body: 'made it',
        token: 4,
      })
      expect(result.etag).not.toBe('')
      expect((await getRaw(s3, bucket, 'out/flaky.json')).body).toBe('made it')
      expect(proxy.seen.filter((method) => method === 'PUT')).toHaveLength(4)
    } finally {
      viaProxy.destroy()
      await proxy.stop()
    }
  })

  it('gives up with a retryable LockStoreError when its time is spent, cutting requests that would wait longer', async () => {
    const hung = new Set<Socket>()
    const silent = createServer((socket) => hung.add(socket))
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    const nowhere = testS3Client({ endpoint: `http://127.0.0.1:${(silent.address() as AddressInfo).port}` })
    try {
      const began = Date.now()
      const error = await fencedPut({
        s3: nowhere,
        bucket,
        key: 'out/hung.json',
        body: 'x',
        token: 1,
        timeoutMs: 500,
      }).then(
        () => undefined,
        (e: unknown) => e,
      )
      expect(error).toMatchObject({ name: 'LockStoreError', retryable: true })
      // The endpoint never answers: without the cut the call would hang until the test's own
      // timeout. A bound far above 500 ms, so that only a missing cut breaks it, not a slow machine.
      expect(Date.now() - began).toBeLessThan(20_000)
    } finally {
      nowhere.destroy()
      for (const socket of hung) socket.destroy()
      await new Promise((resolve) => silent.close(resolve))
    }
  })

  it.each([0, -1, Number.NaN, Number.POSITIVE_INFINITY])(
    'refuses a timeoutMs of %s before any request',
    async (timeoutMs) => {
      await expect(
        fencedPut({ s3, bucket, key: 'out/never.json', body: 'x', token: 1, timeoutMs }),
      ).rejects.toBeInstanceOf(LockOptionsError)
    },
  )
})

describe('fencedPut after an outside write turned the lock back', () => {
  it('refuses the zombie: the new holder’s token is above it though the record said token 1', async () => {
    const lockKey = 'locks/turned-back'
    const zombie = await leaseOf(new S3Lock({ s3, bucket, key: lockKey, ttlMs: 30_000 }).tryAcquire())
    // The promise is about tokens handed out: one the zombie never awaited may be above the next
    // holder's (W2), and is refused to no one, so the zombie takes its own first.
    const zombieToken = (await zombie?.fencingToken()) ?? -1
    // Someone restores an old record (or writes one by hand) while the zombie still holds.
    await putRaw(s3, bucket, lockKey, JSON.stringify({ v: 1, token: 1, expires_at: 0, owner: 'restored' }))
    const successor = await leaseOf(new S3Lock({ s3, bucket, key: lockKey }).tryAcquire())
    const successorToken = (await successor?.fencingToken()) ?? -1
    expect(successorToken).toBeGreaterThan(zombieToken)

    await fencedPut({ s3, bucket, key: 'out/turned-back.json', body: 'new', token: successorToken })
    const error = await fencedPut({
      s3,
      bucket,
      key: 'out/turned-back.json',
      body: 'stale',
      token: zombieToken,
    }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(FencedWriteRejectedError)
    expect((await getRaw(s3, bucket, 'out/turned-back.json')).body).toBe('new')
  })

  it('keeps the new holder’s output after a token put 60 s ahead of the clock and a deletion: the zombie never got the lock', async () => {
    const lockKey = 'locks/ahead'
    const out = 'out/ahead.json'
    const ahead = { v: 1, token: Date.now() + 60_000, expires_at: 0, owner: 'script' }
    await putRaw(s3, bucket, lockKey, JSON.stringify(ahead))
    // Before: it followed the outside token by +1 at once, a minute above the store's clock.
    const zombie = await leaseOf(new S3Lock({ s3, bucket, key: lockKey, ttlMs: 30_000 }).tryAcquire()).catch(
      (e: unknown) => e,
    )
    await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: lockKey }))
    const successor = await leaseOf(new S3Lock({ s3, bucket, key: lockKey }).tryAcquire())
    await fencedPut({ s3, bucket, key: out, body: 'new', token: successor?.record.token ?? -1 })
    if (zombie instanceof Lease) {
      await fencedPut({ s3, bucket, key: out, body: 'stale', token: zombie.record.token }).catch(
        () => undefined,
      )
    }
    expect((await getRaw(s3, bucket, out)).body).toBe('new')
    expect(zombie).toMatchObject({ name: 'LockConflictError', reason: 'record-ahead-of-clock' })
  })
})
