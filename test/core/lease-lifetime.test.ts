import { describe, expect, it } from 'vitest'
import type { LockStore } from '../../lib/extend.js'
import { keepAlive, Lock, LockLostError } from '../../lib/index.js'
import { MemoryLockStore } from '../../lib/memory/index.js'
import { leaseOf } from '../support/lease-of.js'
import { ManualClock } from '../support/sim-clock.js'

const TTL = 6_000
const MARGIN = 1_000

/** A lock on a store whose writes can be made to hang, as a holder cut off from the store would. */
function setup() {
  const clock = new ManualClock()
  const inner = new MemoryLockStore({ clock, clockResolutionMs: 1 })
  const control = { stalled: false, replaces: 0 }
  const store: LockStore = {
    clockResolutionMs: 1,
    read: (key, options) => inner.read(key, options),
    create: (key, body, options) => inner.create(key, body, options),
    replace: async (key, body, etag, options) => {
      control.replaces++
      if (control.stalled) await new Promise(() => {}) // never answers
      return inner.replace(key, body, etag, options)
    },
  }
  const lock = (owner: string) =>
    new Lock({ store, key: 'k', owner, ttlMs: TTL, clockSkewMarginMs: MARGIN, clock, random: () => 0.5 })
  return { clock, control, lock }
}

/** Acquires on the manual clock: the lease is handed out once the store's clock has reached its token. */
async function acquired(clock: ManualClock, lock: Lock) {
  const lease = await clock.run(leaseOf(lock.tryAcquire()))
  if (!lease) throw new Error('expected the lock to be free')
  return lease
}

describe('a lease knows its own end', () => {
  it('aborts its signal with an expired LockLostError when its end passes unrenewed, no write needed', async () => {
    const { clock, lock } = setup()
    const lease = await acquired(clock, lock('a'))
    const end = lease.expiresAt.getTime()
    await clock.advance(end - clock.now() - 1)
    expect(lease.signal.aborted).toBe(false)
    expect(lease.isHeld).toBe(true)
    await clock.advance(1)
    expect(lease.signal.aborted).toBe(true)
    expect(lease.signal.reason).toBeInstanceOf(LockLostError)
    expect(lease.signal.reason).toMatchObject({ reason: 'expired', token: lease.record.token })
    expect(lease.isLost).toBe(true)
    expect(lease.lostError).toBe(lease.signal.reason)
  })

  it('aborts before any contender can take the lock over', async () => {
    const { clock, lock } = setup()
    const lease = await acquired(clock, lock('a'))
    const contender = lock('b')
    let abortedAt: number | undefined
    lease.signal.addEventListener('abort', () => {
      abortedAt = clock.now()
    })
    let takenAt: number | undefined
    while (takenAt === undefined) {
      await clock.advance(100)
      // Taken when its write lands, which the store answers at once; handed out after that.
      const tried = clock.now()
      if (await clock.run(leaseOf(contender.tryAcquire()))) takenAt = tried
    }
    expect(abortedAt).toBeDefined()
    expect(abortedAt).toBeLessThan(takenAt)
    expect(takenAt - (abortedAt ?? 0)).toBeGreaterThanOrEqual(2 * MARGIN - 100)
  })

  it('moves its end with each successful renewal', async () => {
    const { clock, lock } = setup()
    const lease = await acquired(clock, lock('a'))
    await clock.advance(4_000)
    await lease.renew()
    await clock.advance(4_000) // past the first end, within the renewed one
    expect(lease.signal.aborted).toBe(false)
    // Within a few ms: what the store's clock may have drifted since it was last heard from.
    expect(lease.remainingMs).toBeGreaterThanOrEqual(TTL - MARGIN - 4_000 - 2)
    expect(lease.remainingMs).toBeLessThanOrEqual(TTL - MARGIN - 4_000)
  })

  it('stops its watchdog once released', async () => {
    const { clock, lock } = setup()
    const lease = await acquired(clock, lock('a'))
    await lease.release()
    await clock.advance(TTL * 3)
    expect(lease.signal.aborted).toBe(false)
    expect(lease.isReleased).toBe(true)
  })
})

describe('keepAlive', () => {
  it('renews every everyMs while the work goes on, and sends nothing once stopped', async () => {
    const { clock, control, lock } = setup()
    const lease = await acquired(clock, lock('a'))
    const stop = keepAlive(lease, { everyMs: 2_000, clock })
    await clock.advance(10_000)
    expect(control.replaces).toBe(5)
    expect(lease.signal.aborted).toBe(false)
    stop()
    await clock.advance(10_000)
    expect(control.replaces).toBe(5)
    expect(lease.signal.aborted).toBe(true) // no renewals: it ran out
  })

  it('beats before half the remaining time is gone when everyMs is too slow for the lease', async () => {
    const { clock, control, lock } = setup()
    const lease = await acquired(clock, lock('a'))
    keepAlive(lease, { everyMs: 4_900, clock })
    await clock.advance(2_500)
    expect(control.replaces).toBe(1) // at (6000 - 1000) / 2 = 2500 ms, not 4900
  })

  it('lets the lease expire, and its signal abort, while a renewal is stuck', async () => {
    const { clock, control, lock } = setup()
    const lease = await acquired(clock, lock('a'))
    control.stalled = true
    keepAlive(lease, { everyMs: 2_000, clock })
    await clock.advance(TTL - MARGIN)
    expect(lease.signal.reason).toMatchObject({ name: 'LockLostError', reason: 'expired' })
  })

  it('stops on a lost lease and keeps trying after transient failures', async () => {
    const { clock, lock } = setup()
    const lease = await acquired(clock, lock('a'))
    const errors: unknown[] = []
    let failures = 1
    const renew = lease.renew.bind(lease)
    lease.renew = async (ttlMs) => {
      if (failures-- > 0) throw new Error('store hiccup')
      return renew(ttlMs)
    }
    keepAlive(lease, { everyMs: 2_000, clock, onError: (error) => errors.push(error) })
    await clock.advance(2_000)
    expect(errors).toHaveLength(1)
    await clock.advance(1_000) // retried after half a period
    expect(lease.remainingMs).toBeGreaterThanOrEqual(TTL - MARGIN - 2) // renewed just now
    expect(lease.signal.aborted).toBe(false)
  })

  it('sends no renewal at or past `until`, and renews right up to it', async () => {
    const { clock, control, lock } = setup()
    const lease = await acquired(clock, lock('a'))
    keepAlive(lease, { everyMs: 1_000, clock, until: clock.now() + 3_000 })
    await clock.advance(2_999)
    expect(control.replaces).toBe(2)
    await clock.advance(10_000)
    expect(control.replaces).toBe(2)
  })
})
