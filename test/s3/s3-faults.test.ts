import type { AddressInfo } from 'node:net'
import { createServer, type Socket } from 'node:net'
import { DeleteObjectCommand, HeadObjectCommand, type S3Client } from '@aws-sdk/client-s3'
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest'
import { WriteStatus } from '../../lib/extend.js'
import { LockClockError, LockStoreError } from '../../lib/index.js'
import { S3Lock, S3LockStore } from '../../lib/s3/index.js'
import { FaultProxy } from '../support/fault-proxy.js'
import { leaseOf } from '../support/lease-of.js'
import { operatorFor } from '../support/operator-for.js'
import { countRequests, freshBucket, getRecord, testS3Client } from '../support/s3.js'
import { expectTokenOfStoreTime, storeTime } from '../support/store-time.js'

let direct: S3Client
let viaProxy: S3Client
let proxy: FaultProxy
let bucket: string
let keys = 0
const freshKey = (label: string): string => `locks/${label}-${++keys}`

beforeAll(async () => {
  direct = testS3Client()
  bucket = await freshBucket(direct, 'faults')
  proxy = new FaultProxy(inject('s3').endpoint)
  viaProxy = testS3Client({ endpoint: await proxy.start() })
})

afterEach(() => proxy.clear())

afterAll(async () => {
  viaProxy.destroy()
  direct.destroy()
  await proxy.stop()
})

/** The engine's clock, as its answers to a client without faults date it. */
const now = () => storeTime(new S3LockStore({ s3: direct, bucket }))

const lockOn = (key: string, owner = 'faulty') =>
  new S3Lock({
    s3: viaProxy,
    bucket,
    key,
    owner,
    requestTimeoutMs: 800,
    retry: { attempts: 4, baseMs: 20, capMs: 100 },
  })

describe('S3Lock through a fault-injecting proxy', () => {
  it('retries a 503 SlowDown on the read and on the write, then acquires', async () => {
    const key = freshKey('503')
    proxy.inject('GET', { kind: 'status', status: 503, code: 'SlowDown' })
    proxy.inject('PUT', { kind: 'status', status: 500, code: 'InternalError' })
    const before = await now()
    const lease = await leaseOf(lockOn(key).tryAcquire())
    expectTokenOfStoreTime(await lease?.fencingToken(), before, await now())
    expect(await getRecord(direct, bucket, key)).toMatchObject({
      token: lease?.record.token,
      run: 1,
      owner: 'faulty',
    })
  })

  it('retries a request that times out', async () => {
    const key = freshKey('timeout')
    proxy.inject('PUT', { kind: 'delay', ms: 2_000 })
    const before = await now()
    const lease = await leaseOf(lockOn(key).tryAcquire())
    expectTokenOfStoreTime(await lease?.fencingToken(), before, await now())
    // The slow first PUT reaches S3 after the retry won; its If-None-Match makes it harmless.
    await new Promise((resolve) => setTimeout(resolve, 2_500))
    expect(await getRecord(direct, bucket, key)).toMatchObject({
      token: lease?.record.token,
      run: 1,
      owner: 'faulty',
    })
  })

  it('retries a dropped connection', async () => {
    const key = freshKey('reset')
    proxy.inject('PUT', { kind: 'reset' })
    const before = await now()
    const lease = await leaseOf(lockOn(key).tryAcquire())
    expectTokenOfStoreTime(await lease?.fencingToken(), before, await now())
    expect(lease?.record.run).toBe(1)
  })

  it('retries a read whose body is cut off mid-way, then acquires above the token it finally read', async () => {
    const key = freshKey('cut-body')
    const first = await leaseOf(lockOn(key, 'first').tryAcquire())
    await first?.release()
    proxy.inject('GET', { kind: 'cut-body' })
    const seenBefore = proxy.seen.length
    const lease = await leaseOf(lockOn(key, 'second').tryAcquire())
    expect(lease?.record.token).toBeGreaterThan(first?.record.token ?? Number.POSITIVE_INFINITY)
    expect(lease?.record.run).toBe(2)
    expect(proxy.seen.slice(seenBefore)).toEqual(['GET', 'GET', 'PUT'])
  })

  it('retries a read whose body stalls, once the request timeout has passed', async () => {
    const key = freshKey('stall-body')
    const first = await leaseOf(lockOn(key, 'first').tryAcquire())
    await first?.release()
    proxy.inject('GET', { kind: 'stall-body' })
    const lease = await leaseOf(lockOn(key, 'second').tryAcquire())
    expect(lease?.record.token).toBeGreaterThan(first?.record.token ?? Number.POSITIVE_INFINITY)
    expect(lease?.record.run).toBe(2)
  })

  it('keeps a write whose answer was lost, recognising its own record on the retry', async () => {
    const key = freshKey('lost-answer')
    proxy.inject('PUT', { kind: 'lose-response' })
    const lock = lockOn(key)
    const before = await now()
    const lease = await leaseOf(lock.tryAcquire())
    expectTokenOfStoreTime(await lease?.fencingToken(), before, await now())
    proxy.inject('PUT', { kind: 'lose-response' })
    await lease?.renew()
    proxy.inject('PUT', { kind: 'lose-response' })
    await lease?.release()
    expect(await getRecord(direct, bucket, key)).toMatchObject({
      token: lease?.record.token,
      run: 1,
      expires_at: 0,
      owner: 'faulty',
    })
  })

  it('re-reads and retries after 409 ConditionalRequestConflict', async () => {
    const key = freshKey('409')
    const lock = lockOn(key)
    const first = await leaseOf(lock.tryAcquire())
    await first?.release()
    proxy.inject('PUT', { kind: 'status', status: 409, code: 'ConditionalRequestConflict' })
    const lease = await leaseOf(lock.tryAcquire())
    expect(lease?.record.token).toBeGreaterThan(first?.record.token ?? Number.POSITIVE_INFINITY)
    proxy.inject('PUT', { kind: 'status', status: 409, code: 'ConditionalRequestConflict' })
    await lease?.release()
    expect(await getRecord(direct, bucket, key)).toMatchObject({
      token: lease?.record.token,
      run: 2,
      expires_at: 0,
    })
  })

  it("pauses through a 409 ConditionalRequestConflict, and the holder keeps its lease; a holder's renewal answered 409 after a pause carries it over", async () => {
    const key = freshKey('pause-409')
    const holder = await leaseOf(lockOn(key, 'job/1').tryAcquire())
    if (!holder) throw new Error('not acquired')
    proxy.inject('PUT', { kind: 'status', status: 409, code: 'ConditionalRequestConflict' })
    const result = await operatorFor(lockOn(key, 'ops')).pause({ note: 'n' })
    expect(result).toMatchObject({ wasHeld: true, endedLease: false })
    expect(await getRecord(direct, bucket, key)).toMatchObject({
      token: holder.record.token,
      paused: { by: 'ops' },
    })
    // The holder's renewal, sent while the pause was in flight, is answered 409.
    proxy.inject('PUT', { kind: 'status', status: 409, code: 'ConditionalRequestConflict' })
    await holder.renew()
    expect(holder.signal.aborted).toBe(false)
    await holder.release()
    expect(await getRecord(direct, bucket, key)).toMatchObject({
      token: holder.record.token,
      expires_at: 0,
      paused: { note: 'n' },
    })
  })

  it('goes back to the create path when If-Match answers 404 (the object is gone)', async () => {
    const key = freshKey('404')
    const lock = lockOn(key)
    const first = await leaseOf(lock.tryAcquire())
    await first?.release()
    await direct.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }))
    proxy.inject('PUT', { kind: 'status', status: 404, code: 'NoSuchKey' })
    const lease = await leaseOf(lock.tryAcquire())
    expect(lease?.record.token).toBeGreaterThan(first?.record.token ?? Number.POSITIVE_INFINITY) // above the highest this process saw
    expect(await getRecord(direct, bucket, key)).toMatchObject({
      token: lease?.record.token,
      owner: 'faulty',
    })
  })

  it('recognises PreconditionFailed by its code even under another status', async () => {
    const key = freshKey('412-code')
    proxy.inject('PUT', { kind: 'status', status: 400, code: 'PreconditionFailed' })
    // Taken for any other 400, it would reject. Taken for a lost race, the lock reads the object
    // again to name the winner, finds none (the 412 was the proxy's) and takes the lock.
    const lease = await leaseOf(lockOn(key).tryAcquire())
    expect(lease?.record.run).toBe(1)
  })

  it('gives up with a retryable LockStoreError when the store keeps failing', async () => {
    const key = freshKey('down')
    proxy.inject('GET', { kind: 'status', status: 503, code: 'ServiceUnavailable' }, 10)
    const error = await leaseOf(lockOn(key).tryAcquire()).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(LockStoreError)
    expect(error).toMatchObject({ retryable: true })
  })

  it('creates a lock whose GET answers 403, as S3 does for a missing key to a reader without s3:ListBucket', async () => {
    const key = freshKey('no-list')
    proxy.inject('GET', { kind: 'status', status: 403, code: 'AccessDenied' })
    const before = await now()
    const lease = await leaseOf(lockOn(key).tryAcquire())
    expectTokenOfStoreTime(await lease?.fencingToken(), before, await now())
    expect(lease?.record.run).toBe(1)
  })

  it('refuses, without retrying, a lock object that exists but may not be read', async () => {
    const key = freshKey('unreadable')
    await (await leaseOf(lockOn(key, 'first').tryAcquire()))?.release()
    proxy.inject('GET', { kind: 'status', status: 403, code: 'AccessDenied' }, 10)
    const counting = testS3Client({ endpoint: await proxyEndpoint() })
    const requests = countRequests(counting)
    const error = await leaseOf(new S3Lock({ s3: counting, bucket, key }).tryAcquire()).catch(
      (e: unknown) => e,
    )
    expect(error).toMatchObject({ name: 'LockStoreError', retryable: false })
    expect(withoutClockProbes(requests.byOperation)).toEqual({ GetObject: 2, PutObject: 1 })
    counting.destroy()
  })

  it('does not retry a denied write', async () => {
    const key = freshKey('denied')
    proxy.inject('PUT', { kind: 'status', status: 403, code: 'AccessDenied' }, 10)
    const counting = testS3Client({ endpoint: await proxyEndpoint() })
    const requests = countRequests(counting)
    const error = await leaseOf(new S3Lock({ s3: counting, bucket, key }).tryAcquire()).catch(
      (e: unknown) => e,
    )
    expect(error).toMatchObject({ name: 'LockStoreError', retryable: false })
    expect(withoutClockProbes(requests.byOperation)).toEqual({ GetObject: 1, PutObject: 1 })
    counting.destroy()
  })
})

describe('S3Lock through a proxy that strips the Date header', () => {
  /** Every answer to the next few requests comes without a date. */
  const stripDates = () => {
    proxy.inject('GET', { kind: 'no-date' }, 10)
    proxy.inject('PUT', { kind: 'no-date' }, 10)
  }

  it('refuses with LockClockError, writing nothing, when its process has never learned the store time', async () => {
    const key = freshKey('no-date')
    const fresh = testS3Client({ endpoint: proxy.endpoint })
    stripDates()
    await expect(leaseOf(new S3Lock({ s3: fresh, bucket, key }).tryAcquire())).rejects.toThrow(LockClockError)
    expect(await direct.send(new HeadObjectCommand({ Bucket: bucket, Key: key })).catch(() => 'absent')).toBe(
      'absent',
    )
    fresh.destroy()
  })

  it('acquires on the estimate a lock on the same client learned, even with every answer undated', async () => {
    const shared = testS3Client({ endpoint: proxy.endpoint })
    await operatorFor(new S3Lock({ s3: shared, bucket, key: freshKey('learner') })).inspect()
    stripDates()
    const before = await now()
    const lease = await leaseOf(new S3Lock({ s3: shared, bucket, key: freshKey('no-date') }).tryAcquire())
    expectTokenOfStoreTime(await lease?.fencingToken(), before, await now())
    await lease?.release()
    shared.destroy()
  })
})

describe('S3Lock.acquire with a wait, bounded as a whole', () => {
  it('ends at the wait, not after the request timeouts, when the endpoint never answers', async () => {
    const hung = new Set<Socket>()
    const silent = createServer((socket) => hung.add(socket))
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    const s3 = testS3Client({ endpoint: `http://127.0.0.1:${(silent.address() as AddressInfo).port}` })
    try {
      // A request timeout (30 s) far longer than the wait: each call must be cut short. The bound
      // is far above the 1.5 s wait and far below one request timeout, so that only a call left
      // to run its course breaks it, not a slow machine.
      const lock = new S3Lock({ s3, bucket, key: freshKey('silent'), requestTimeoutMs: 30_000 })
      const began = Date.now()
      const error = await lock.acquire({ waitMs: 1_500 }).catch((e: unknown) => e)
      expect(error).toMatchObject({ name: 'LockStoreError', retryable: true })
      expect(Date.now() - began).toBeLessThan(15_000)
    } finally {
      s3.destroy()
      for (const socket of hung) socket.destroy()
      await new Promise((resolve) => silent.close(resolve))
    }
  })

  it('names the holder it last saw when the wait runs out during a slow read', async () => {
    const key = freshKey('slow-read')
    await leaseOf(new S3Lock({ s3: direct, bucket, key, owner: 'holder' }).tryAcquire())
    proxy.inject('GET', { kind: 'delay', ms: 0 })
    proxy.inject('GET', { kind: 'delay', ms: 30_000 })
    const began = Date.now()
    const error = await new S3Lock({ s3: viaProxy, bucket, key, owner: 'waiter' })
      .acquire({ waitMs: 1_000, backoff: { baseMs: 100, capMs: 100 } })
      .catch((e: unknown) => e)
    expect(error).toMatchObject({ name: 'LockTimeoutError', holder: { owner: 'holder' } })
    // Far above the 1 s wait, far below the 30 s read: only waiting out the read breaks it.
    expect(Date.now() - began).toBeLessThan(15_000)
  })
})

describe('S3LockStore etag quoting', () => {
  it('uses bare etags in If-Match, which this engine needs', async () => {
    const key = freshKey('quoting')
    const store = new S3LockStore({ s3: direct, bucket })
    const created = await store.create(key, '{}')
    expect(created.status).toBe(WriteStatus.Written)
    const etag = created.status === WriteStatus.Written ? created.etag : ''
    expect(etag).not.toMatch(/"/)
    expect((await store.replace(key, '{"a":1}', etag)).status).toBe(WriteStatus.Written)
  })

  it('with quoting forced on, an engine that wants bare etags refuses every If-Match', async () => {
    const key = freshKey('quoted')
    const store = new S3LockStore({ s3: direct, bucket, etagQuoting: 'quoted' })
    const created = await store.create(key, '{}')
    const etag = created.status === WriteStatus.Written ? created.etag : ''
    expect((await store.replace(key, '{"a":1}', etag)).status).toBe(WriteStatus.PreconditionFailed)
  })
})

async function proxyEndpoint(): Promise<string> {
  const endpoint = await viaProxy.config.endpoint?.()
  return `${endpoint?.protocol}//${endpoint?.hostname}:${endpoint?.port}`
}

/**
 * Requests by operation, leaving out the HEADs that ask the store's time while a new token's
 * wait goes on (it comes before the write): what these specs count is retries.
 */
function withoutClockProbes(byOperation: Map<string, number>): Record<string, number> {
  const { HeadObject: _probes, ...rest } = Object.fromEntries(byOperation)
  return rest
}
