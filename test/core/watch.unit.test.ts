import { describe, expect, it } from 'vitest'
import { watchLease } from '../../lib/core/watch.js'
import { AcquireStatus, Lock, LockLostError, LockStoreError, LostReason } from '../../lib/index.js'
import { MemoryLockStore } from '../../lib/memory/index.js'
import { LockOperator } from '../../lib/operator/lock-operator.js'
import { ManualClock } from '../support/sim-clock.js'

const EVERY_MS = 5_000

/** A lease held for a minute on a memory store, on a manual clock, and a second Lock for others. */
async function held() {
  const clock = new ManualClock()
  const store = new MemoryLockStore({ clock, clockResolutionMs: 1_000 })
  const lock = new Lock({ store, key: 'jobs/watched', owner: 'run', ttlMs: 60_000, clock, random: () => 0.5 })
  const acquisition = await clock.run(lock.tryAcquire())
  if (acquisition.status !== AcquireStatus.Acquired) throw new Error('not acquired')
  const operator = new LockOperator({
    store,
    key: 'jobs/watched',
    operator: 'operator@host',
    clock,
    random: () => 0.5,
  })
  return { clock, store, lease: acquisition.lease, operator }
}

describe('watching a lease (what a replaceable run does between its renewals)', () => {
  it('reads the record once per period while the lease is held, and nothing more', async () => {
    const { clock, store, lease } = await held()
    const reads = store.requests.read
    const stop = watchLease(lease, { everyMs: EVERY_MS, clock })
    await clock.advance(EVERY_MS - 1)
    expect(store.requests.read - reads).toBe(0)
    await clock.advance(1)
    expect(store.requests.read - reads).toBe(1)
    await clock.advance(2 * EVERY_MS)
    expect(store.requests.read - reads).toBe(3)
    expect(store.requests.create + store.requests.replace).toBe(1) // the acquisition: a look writes nothing
    stop()
  })

  it("aborts the lease's signal within one period when an operator ended it", async () => {
    const { clock, lease, operator } = await held()
    const heard: unknown[] = []
    watchLease(lease, { everyMs: EVERY_MS, clock, onError: (error) => heard.push(error) })
    await clock.advance(1_000)
    await operator.forceRelease()
    expect(lease.signal.aborted).toBe(false)
    await clock.advance(EVERY_MS - 1_000)
    expect(lease.signal.aborted).toBe(true)
    expect(lease.signal.reason).toBeInstanceOf(LockLostError)
    expect((lease.signal.reason as LockLostError).reason).toBe(LostReason.ReleasedByOperator)
    expect(clock.pending).toBe(0) // a lost lease is watched no more
    expect(heard).toEqual([]) // the loss is the lease's news (its signal), not a failure to read
  })

  it('schedules nothing for a lease that is over already', async () => {
    const { clock, lease } = await held()
    await clock.run(lease.release())
    watchLease(lease, { everyMs: EVERY_MS, clock })
    expect(clock.pending).toBe(0)
  })

  it('sends no read once stopped, and leaves no timer behind', async () => {
    const { clock, store, lease } = await held()
    const reads = store.requests.read
    const stop = watchLease(lease, { everyMs: EVERY_MS, clock })
    await clock.advance(EVERY_MS)
    const watching = clock.pending
    stop()
    expect(clock.pending).toBe(watching - 1)
    await clock.advance(3 * EVERY_MS)
    expect(store.requests.read - reads).toBe(1)
  })

  it('stops by itself once the lease is released', async () => {
    const { clock, store, lease } = await held()
    watchLease(lease, { everyMs: EVERY_MS, clock })
    await clock.run(lease.release())
    const reads = store.requests.read
    await clock.advance(3 * EVERY_MS)
    expect(store.requests.read - reads).toBe(0)
  })

  it('reports a read that failed and goes on watching: the next period reads again', async () => {
    const { clock, store, lease } = await held()
    const read = store.read.bind(store)
    let failures = 1
    store.read = async (key, options) => {
      // Not worth a retry: the store session hands it straight back.
      if (failures-- > 0) throw new LockStoreError('simulated: access denied', { key, retryable: false })
      return read(key, options)
    }
    const heard: unknown[] = []
    const stop = watchLease(lease, { everyMs: EVERY_MS, clock, onError: (error) => heard.push(error) })
    await clock.advance(EVERY_MS)
    expect(heard).toHaveLength(1)
    expect(heard[0]).toBeInstanceOf(LockStoreError)
    const reads = store.requests.read
    await clock.advance(EVERY_MS)
    expect(store.requests.read - reads).toBe(1)
    expect(heard).toHaveLength(1)
    expect(lease.isHeld).toBe(true)
    stop()
  })

  it('says nothing of a read that fails after it was stopped', async () => {
    const { clock, store, lease } = await held()
    let release: () => void = () => {}
    store.read = (key) =>
      new Promise((_, reject) => {
        release = () => reject(new LockStoreError('simulated: access denied', { key, retryable: false }))
      })
    const heard: unknown[] = []
    const stop = watchLease(lease, { everyMs: EVERY_MS, clock, onError: (error) => heard.push(error) })
    await clock.advance(EVERY_MS)
    stop()
    release()
    await clock.advance(EVERY_MS)
    expect(heard).toEqual([])
  })
})
