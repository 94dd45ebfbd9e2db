import { describe, expect, it } from 'vitest'
import type { Clock } from '../../lib/core/clock.js'
import { Lock } from '../../lib/index.js'
import { leaseOf } from '../support/lease-of.js'
import { operatorFor } from '../support/operator-for.js'
import { ScriptedStore } from '../support/scripted-store.js'
import { SimTime, withoutTimers } from '../support/sim-clock.js'

/**
 * One Lock instance serves many acquisitions (one per invocation in a warm Lambda). It remembers
 * its own last write, to re-acquire with a single blind write, and the leases it handed out, so
 * that it never takes one over from itself while it is live.
 */
const KEY = 'jobs/warm'
const TTL = 10_000
const MARGIN = 1_000

function setup(clockOf: (time: SimTime) => Clock = (time) => time.localClock()) {
  const time = new SimTime()
  const store = new ScriptedStore({ clock: time.serverClock })
  const clock = clockOf(time)
  const lock = (owner = 'worker') =>
    new Lock({ store, key: KEY, owner, ttlMs: TTL, clockSkewMarginMs: MARGIN, clock, random: () => 0.5 })
  /** Forgets the calls made so far: the test counts what comes next. */
  const fresh = () => {
    store.calls.length = 0
  }
  return { time, store, lock, fresh }
}

describe('a lock’s memory of its own writes', () => {
  it('re-acquires after its own release with one write, also for a new owner (the next invocation)', async () => {
    const { store, lock, fresh } = setup()
    const warm = lock()
    const first = await leaseOf(warm.tryAcquire({ owner: 'fn/request-1' }))
    await first?.release()
    fresh()
    const next = await leaseOf(warm.tryAcquire({ owner: 'fn/request-2' }))
    expect(next).toMatchObject({ owner: 'fn/request-2', record: { run: 2 } })
    expect(next?.record.token).toBeGreaterThan(first?.record.token ?? Number.POSITIVE_INFINITY)
    expect(store.calls).toEqual(['replace'])
  })

  it('forgets a cached write found stale, so that its next attempt reads first', async () => {
    const { store, lock, fresh } = setup()
    const a = lock('a')
    await (await leaseOf(a.tryAcquire()))?.release()
    const b = await leaseOf(lock('b').tryAcquire())
    expect(await a.tryAcquire()).toMatchObject({ status: 'held', holder: { owner: 'b' } })
    await b?.release()
    fresh()
    const next = await leaseOf(a.tryAcquire())
    expect(next).toMatchObject({ record: { run: 3 } })
    expect(next?.record.token).toBeGreaterThan(b?.record.token ?? Number.POSITIVE_INFINITY)
    expect(store.calls).toEqual(['read', 'replace'])
  })

  it('reads first after losing its lease: what it wrote last is known to be stale', async () => {
    const { store, lock, fresh } = setup()
    const a = lock()
    const lease = await leaseOf(a.tryAcquire())
    store.memory.delete(KEY)
    await expect(lease?.renew()).rejects.toMatchObject({ reason: 'deleted' })
    fresh()
    expect((await leaseOf(a.tryAcquire()))?.record.token).toBeGreaterThan(
      lease?.record.token ?? Number.POSITIVE_INFINITY,
    )
    expect(store.calls).toEqual(['read', 'create'])
  })

  it('recreates a vanished object after a blind write finds it gone, above the token it had', async () => {
    const { store, lock, fresh } = setup()
    const a = lock()
    const first = await leaseOf(a.tryAcquire())
    await first?.release()
    store.memory.delete(KEY)
    fresh()
    expect((await leaseOf(a.tryAcquire()))?.record.token).toBeGreaterThan(
      first?.record.token ?? Number.POSITIVE_INFINITY,
    )
    expect(store.calls).toEqual(['replace', 'read', 'create'])
  })
})

describe('a lock’s own live leases', () => {
  it('do not stop it from taking a free record for another owner (two invocations in one process)', async () => {
    const { lock } = setup()
    const shared = lock()
    const first = await leaseOf(shared.tryAcquire({ owner: 'fn/request-1' }))
    const freed = await operatorFor(lock('operator')).forceRelease() // the record is free; the first lease does not know yet
    expect(first?.isHeld).toBe(true)
    const second = await leaseOf(shared.tryAcquire({ owner: 'fn/request-2' }))
    expect(second).toMatchObject({ owner: 'fn/request-2', record: { run: 2 } })
    expect(second?.record.token).toBeGreaterThan(freed?.token ?? Number.POSITIVE_INFINITY)
  })

  it('keep the record held for their own owner, until their end passes by the clock, though no timer fired', async () => {
    const { time, store, lock, fresh } = setup((t) => withoutTimers(t.localClock()))
    const warm = lock()
    const first = await leaseOf(warm.tryAcquire({ owner: 'fn/request-1' }))
    time.advance((first?.remainingMs ?? 0) - 1)
    expect(await warm.tryAcquire({ owner: 'fn/request-1' })).toMatchObject({ status: 'held' })
    time.advance(1) // its end, exactly: the retry of that invocation may take it over
    expect(first?.isHeld).toBe(true) // its watchdog never ran
    fresh()
    const retry = await leaseOf(warm.tryAcquire({ owner: 'fn/request-1' }))
    expect(retry?.record.token).toBeGreaterThan(first?.record.token ?? Number.POSITIVE_INFINITY)
    expect(store.calls).toEqual(['replace']) // its own record, from its cache
  })

  it('lose without discarding what a newer lease of the same lock wrote since', async () => {
    const { store, lock, fresh } = setup((t) => withoutTimers(t.localClock()))
    const warm = lock()
    const stale = await leaseOf(warm.tryAcquire({ owner: 'fn/request-1' }))
    await operatorFor(lock('operator')).forceRelease()
    const newer = await leaseOf(warm.tryAcquire({ owner: 'fn/request-2' }))
    await newer?.release()
    // Ended by the operator, though a newer run has taken the lock since.
    await expect(stale?.renew()).rejects.toMatchObject({ reason: 'released-by-operator' })
    fresh()
    const third = await leaseOf(warm.tryAcquire({ owner: 'fn/request-3' }))
    expect(third).toMatchObject({ record: { run: 3 } })
    expect(third?.record.token).toBeGreaterThan(newer?.record.token ?? Number.POSITIVE_INFINITY)
    expect(store.calls).toEqual(['replace'])
  })
})
