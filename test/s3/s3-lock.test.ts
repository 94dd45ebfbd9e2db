import { DeleteObjectCommand, type S3Client } from '@aws-sdk/client-s3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PROBES_PER_TICK } from '../../lib/core/clock-probe.js'
import { LockCorruptedError, LockLostError, LockTimeoutError, LostReason } from '../../lib/index.js'
import { S3Lock, type S3LockOptions, S3LockStore } from '../../lib/s3/index.js'
import { leaseOf } from '../support/lease-of.js'
import { operatorFor } from '../support/operator-for.js'
import { countRequests, freshBucket, getRaw, getRecord, putRaw, testS3Client } from '../support/s3.js'
import { expectTokenOfStoreTime, storeTime } from '../support/store-time.js'

let s3: S3Client
let bucket: string
let keys = 0
const freshKey = (label: string): string => `locks/${label}-${++keys}`
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

beforeAll(async () => {
  s3 = testS3Client()
  bucket = await freshBucket(s3, 'lock')
})

afterAll(() => s3.destroy())

const lockOn = (key: string, options: Partial<S3LockOptions> = {}) =>
  new S3Lock({ s3, bucket, key, ttlMs: 30_000, clockSkewMarginMs: 500, ...options })
/** The engine's clock, as its answers date it. */
const now = () => storeTime(new S3LockStore({ s3, bucket }))

describe('S3Lock on a real S3 engine', () => {
  it('grants exactly one of 50 concurrent tryAcquire calls on a fresh key, 20 times over', async () => {
    const winners: number[] = []
    for (let round = 0; round < 20; round++) {
      const key = freshKey('race')
      const contenders = Array.from({ length: 50 }, (_, i) =>
        lockOn(key, { owner: `contender-${round}-${i}` }),
      )
      const before = await now()
      const leases = await Promise.all(contenders.map((lock) => leaseOf(lock.tryAcquire())))
      const won = leases.flatMap((lease, i) => (lease ? [i] : []))
      expect(won).toHaveLength(1)
      const token = await leases[won[0] ?? -1]?.fencingToken()
      expectTokenOfStoreTime(token, before, await now())
      const record = await getRecord(s3, bucket, key)
      expect(record).toMatchObject({ token, run: 1, owner: `contender-${round}-${won[0]}` })
      winners.push(won[0] ?? -1)
    }
    expect(winners).toHaveLength(20)
  })

  it('hands out ever higher tokens over 100 acquire/release cycles, runs 1..100, with expires_at 0 after each release', async () => {
    const key = freshKey('cycles')
    const locks = [lockOn(key, { owner: 'a' }), lockOn(key, { owner: 'b' })]
    let last = 0
    for (let i = 1; i <= 100; i++) {
      const lease = await leaseOf(locks[i % 2]?.tryAcquire())
      expect(lease?.record.token).toBeGreaterThan(last)
      last = lease?.record.token ?? Number.POSITIVE_INFINITY
      await lease?.release()
      expect(await getRecord(s3, bucket, key)).toMatchObject({ token: last, run: i, expires_at: 0 })
    }
  })

  it('costs GET + PUT for a cold acquire (and clock probes while it waits for its token), one PUT for a warm re-acquire, one PUT for a release', async () => {
    const key = freshKey('requests')
    const counting = testS3Client()
    const requests = countRequests(counting)
    const lock = new S3Lock({ s3: counting, bucket, key })
    const cold = await leaseOf(lock.tryAcquire())
    expect(requests.protocol()).toEqual({ GetObject: 1, PutObject: 1 })
    // Probes are spread a fortieth of the estimate's width apart: a second's width at most.
    expect(requests.clockProbes()).toBeLessThanOrEqual(PROBES_PER_TICK + 1)
    requests.reset()
    await cold?.release()
    expect(Object.fromEntries(requests.byOperation)).toEqual({ PutObject: 1 })
    requests.reset()
    const warm = await leaseOf(lock.tryAcquire())
    expect(warm?.record.token).toBeGreaterThan(cold?.record.token ?? Number.POSITIVE_INFINITY)
    expect(warm?.record.run).toBe(2)
    expect(requests.protocol()).toEqual({ PutObject: 1 })
    await warm?.release()
    counting.destroy()
  })

  it('lets a contender take over an expired lease with a higher token, and refuses the old holder', async () => {
    const key = freshKey('takeover')
    const holder = lockOn(key, { owner: 'crashed' })
    const lease = await leaseOf(holder.tryAcquire())
    expect(lease?.record.run).toBe(1)
    const thief = lockOn(key, { owner: 'next' })
    expect(await leaseOf(thief.tryAcquire())).toBeNull()
    // The holder shortens its lease to 1.5 s, then "crashes": it renews no more.
    await lease?.renew(1_500)
    // Its lease knows its end has passed (that it knows before any contender can take over is
    // specified on simulated time: test/core/lease-lifetime.test.ts).
    await new Promise((resolve) => lease?.signal.addEventListener('abort', resolve))
    expect(lease?.signal.reason).toMatchObject({ name: 'LockLostError', reason: LostReason.Expired })
    // The contender polls until the lease has run out by the engine's clock, margins included.
    let next = await leaseOf(thief.tryAcquire())
    while (next === null) {
      await sleep(200)
      next = await leaseOf(thief.tryAcquire())
    }
    expect(next.record.token).toBeGreaterThan(lease?.record.token ?? Number.POSITIVE_INFINITY)
    expect(next.record.run).toBe(2)
    const taken = await getRaw(s3, bucket, key)

    await expect(lease?.renew()).rejects.toBeInstanceOf(LockLostError)
    await expect(lease?.release()).rejects.toBeInstanceOf(LockLostError)
    expect(await getRaw(s3, bucket, key)).toEqual(taken)
  })

  it('renews with the same token and a later expires_at', async () => {
    const key = freshKey('renew')
    const lease = await leaseOf(lockOn(key).tryAcquire())
    const before = await getRecord(s3, bucket, key)
    await sleep(1_100)
    await lease?.renew(60_000)
    const after = await getRecord(s3, bucket, key)
    expect(after.token).toBe(before.token)
    expect(after.expires_at as number).toBeGreaterThan(before.expires_at as number)
    await lease?.release()
  })

  it('re-acquires at once, with a higher token, when the record names the same owner', async () => {
    const key = freshKey('same-owner')
    const crashed = await leaseOf(lockOn(key, { owner: 'fn/req-1' }).tryAcquire()) // then "crashes"
    const retry = await leaseOf(lockOn(key, { owner: 'fn/req-1' }).tryAcquire())
    expect(retry?.record.token).toBeGreaterThan(crashed?.record.token ?? Number.POSITIVE_INFINITY)
    expect(retry?.record.run).toBe(2)
  })

  it('reports a deleted lock as lost and recreates it above the last token it saw', async () => {
    const key = freshKey('deleted')
    const lock = lockOn(key)
    const lease = await leaseOf(lock.tryAcquire())
    await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }))
    await expect(lease?.renew()).rejects.toMatchObject({ reason: LostReason.Deleted })
    const again = await leaseOf(lock.tryAcquire())
    expect(again?.record.token).toBeGreaterThan(lease?.record.token ?? Number.POSITIVE_INFINITY)
  })

  describe('corrupted lock objects', () => {
    const bodies: [string, string][] = [
      ['not JSON', 'hello'],
      ['a record without token', JSON.stringify({ v: 1, expires_at: 0, owner: 'x' })],
      ['a negative token', JSON.stringify({ v: 1, token: -3, expires_at: 0, owner: 'x' })],
      ['a non-integer token', JSON.stringify({ v: 1, token: 2.5, expires_at: 0, owner: 'x' })],
      ['an empty object', ''],
      ['a 1 MiB object', 'x'.repeat(1024 * 1024)],
    ]
    it.each(bodies)('refuses %s with LockCorruptedError and leaves it as it was', async (_, body) => {
      const key = freshKey('corrupt')
      await putRaw(s3, bucket, key, body)
      const before = await getRaw(s3, bucket, key)
      const error = await leaseOf(lockOn(key).tryAcquire()).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(LockCorruptedError)
      expect((error as LockCorruptedError).raw).toBe(body.slice(0, 64 * 1024))
      expect(await getRaw(s3, bucket, key)).toEqual(before)
    })
  })

  describe('acquire with a wait', () => {
    it('gets the lock when the holder releases it', async () => {
      const key = freshKey('wait')
      const lease = await leaseOf(lockOn(key, { owner: 'holder' }).tryAcquire())
      const counting = testS3Client()
      const requests = countRequests(counting)
      // The wait is a deadline, not a duration: generous, so that a loaded machine does not reach it.
      const waiting = lockOn(key, { owner: 'waiter', s3: counting }).acquire({ waitMs: 30_000 })
      // Released once the waiter has found the lock held and read it again: it did wait.
      while ((requests.protocol().GetObject ?? 0) < 2) await sleep(20)
      await lease?.release()
      const waited = await waiting
      expect(waited.record.token).toBeGreaterThan(lease?.record.token ?? Number.POSITIVE_INFINITY)
      expect(waited.record.run).toBe(2)
      counting.destroy()
    })

    it('times out with LockTimeoutError while the holder keeps it', async () => {
      const key = freshKey('wait-timeout')
      await leaseOf(lockOn(key, { owner: 'holder' }).tryAcquire())
      const startedAt = Date.now()
      const error = await lockOn(key, { owner: 'waiter' })
        .acquire({ waitMs: 1_500 })
        .catch((e: unknown) => e)
      expect(error).toBeInstanceOf(LockTimeoutError)
      expect(error).toMatchObject({ holder: { owner: 'holder' } })
      expect(Date.now() - startedAt).toBeGreaterThanOrEqual(1_500)
    })
  })

  it('inspects a lock without writing it', async () => {
    const key = freshKey('inspect')
    const lock = lockOn(key)
    expect(await operatorFor(lock).inspect()).toBeNull()
    const lease = await leaseOf(lock.tryAcquire())
    const before = await getRaw(s3, bucket, key)
    const info = await operatorFor(lockOn(key)).inspect()
    expect(info).toMatchObject({ token: lease?.record.token, owner: lock.owner, held: true })
    expect(`"${info?.etag}"`).toBe(before.etag)
    expect(await getRaw(s3, bucket, key)).toEqual(before)
  })
})
