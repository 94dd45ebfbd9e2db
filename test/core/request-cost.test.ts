import { describe, expect, it } from 'vitest'
import type { LockStore, ReadResult, StoreCallOptions, WriteResult } from '../../lib/extend.js'
import { Lock, LockStoreError } from '../../lib/index.js'
import { MemoryLockStore } from '../../lib/memory/index.js'
import { leaseOf } from '../support/lease-of.js'
import { SimTime } from '../support/sim-clock.js'

const KEY = 'jobs/nightly'

/** A store that, like Ceph 16, answers a losing If-Match write with a 500 instead of a 412. */
class ServerErrorOnLostReplace implements LockStore {
  readonly clockResolutionMs = 1_000
  constructor(readonly inner: MemoryLockStore) {}

  read(key: string, options?: StoreCallOptions): Promise<ReadResult> {
    return this.inner.read(key, options)
  }
  create(key: string, body: string, options?: StoreCallOptions): Promise<WriteResult> {
    return this.inner.create(key, body, options)
  }
  async replace(key: string, body: string, etag: string, options?: StoreCallOptions): Promise<WriteResult> {
    const result = await this.inner.replace(key, body, etag, options)
    if (result.status === 'precondition-failed') {
      throw new LockStoreError('InternalError (500)', { key, retryable: true })
    }
    return result
  }
}

describe('what a lost race costs', () => {
  it('reads once when its blind write from cache loses with an ambiguous 500, settling and deciding on that one read', async () => {
    const time = new SimTime()
    const inner = new MemoryLockStore({ clock: time.serverClock, clockResolutionMs: 1_000 })
    const store = new ServerErrorOnLostReplace(inner)
    const lockFor = (owner: string) =>
      new Lock({ store, key: KEY, owner, ttlMs: 10_000, clockSkewMarginMs: 1_000, clock: time.localClock() })
    const warm = lockFor('warm')
    const first = await leaseOf(warm.tryAcquire())
    await first?.release()
    const other = await leaseOf(lockFor('other').tryAcquire())
    expect(other?.record.token).toBeGreaterThan(first?.record.token ?? Number.POSITIVE_INFINITY)
    const before = { ...inner.requests }
    const attempt = await warm.tryAcquire()
    expect(attempt).toMatchObject({ status: 'held', holder: { owner: 'other', token: other?.record.token } })
    expect(inner.requests.replace - before.replace).toBe(1)
    expect(inner.requests.read - before.read).toBe(1)
  })
})
