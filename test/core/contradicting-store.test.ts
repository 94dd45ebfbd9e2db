import { describe, expect, it } from 'vitest'
import { AcquireStatus, Lock, LockStoreError } from '../../lib/index.js'
import { MemoryLockStore } from '../../lib/memory/index.js'
import { ManualClock } from '../support/sim-clock.js'

/**
 * An engine that answers "precondition failed" to a write whose condition holds (dynalite's `=`
 * on maps did): the library cannot work on it, and must say so at once, never spin on it.
 */
describe('a store that refuses a condition that holds', () => {
  it('fails a renewal fast with a LockStoreError naming the answer, after one read, and keeps the lease', async () => {
    const clock = new ManualClock()
    const store = new MemoryLockStore({ clock, clockResolutionMs: 1_000 })
    const lock = new Lock({ store, key: 'jobs/odd', owner: 'a', ttlMs: 60_000, clock, random: () => 0.5 })
    const acquisition = await clock.run(lock.tryAcquire())
    if (acquisition.status !== AcquireStatus.Acquired) throw new Error('not acquired')
    const { lease } = acquisition
    const replace = store.replace.bind(store)
    let refused = 0
    store.replace = async (key, _body, _etag, options) => {
      const answer = await replace(key, '{}', 'no-such-etag', options) // the engine's wrong answer
      refused++
      return answer
    }
    const reads = store.requests.read
    const error = await clock.run(
      lease.renew().catch((e: unknown) => e),
      5_000,
    )
    expect(error).toBeInstanceOf(LockStoreError)
    expect(String(error)).toMatch(/precondition/i)
    expect(refused).toBe(1)
    expect(store.requests.read - reads).toBe(1)
    expect(lease.isHeld).toBe(true) // nobody else wrote: the lease is not lost, it could not be renewed
  })

  it('fails an acquisition over an existing record fast too, naming the answer, instead of "still contended"', async () => {
    const clock = new ManualClock()
    const store = new MemoryLockStore({ clock, clockResolutionMs: 1_000 })
    const first = new Lock({ store, key: 'jobs/odd', owner: 'a', ttlMs: 60_000, clock, random: () => 0.5 })
    const acquisition = await clock.run(first.tryAcquire())
    if (acquisition.status !== AcquireStatus.Acquired) throw new Error('not acquired')
    await clock.run(acquisition.lease.release())
    const replace = store.replace.bind(store)
    let refused = 0
    store.replace = async (key, _body, _etag, options) => {
      refused++
      return replace(key, '{}', 'no-such-etag', options) // the engine's wrong answer
    }
    const other = new Lock({ store, key: 'jobs/odd', owner: 'b', ttlMs: 60_000, clock, random: () => 0.5 })
    const error = await clock.run(
      other.tryAcquire({ waitMs: 10_000 }).catch((e: unknown) => e),
      20_000,
    )
    expect(error).toBeInstanceOf(LockStoreError)
    expect(String(error)).toMatch(/does not evaluate conditional writes/)
    expect((error as LockStoreError).retryable).toBe(false)
    expect(refused).toBe(1)
  })
})
