import { describe, expect, it } from 'vitest'
import { Lock } from '../../lib/index.js'
import { MemoryLockStore } from '../../lib/memory/index.js'
import { leaseOf } from '../support/lease-of.js'
import { operatorFor } from '../support/operator-for.js'
import { SimTime } from '../support/sim-clock.js'

const KEY = 'jobs/boundaries'
const MARGIN = 1_000

/** A store whose clock has 1 ms resolution, so that every boundary can be hit to the millisecond. */
function setup() {
  const time = new SimTime()
  const store = new MemoryLockStore({ clock: time.serverClock, clockResolutionMs: 1 })
  const lock = (owner: string) =>
    new Lock({ store, key: KEY, owner, ttlMs: 10_000, clockSkewMarginMs: MARGIN, clock: time.localClock() })
  /** A record another process wrote, its lease ending `inMs` from now (a whole second, exactly). */
  const heldByOther = (inMs: number) => {
    const expiresAt = (time.now + inMs) / 1000
    store.putRaw(KEY, JSON.stringify({ v: 1, token: 4, expires_at: expiresAt, owner: 'other' }))
    return expiresAt * 1000
  }
  return { time, store, lock, heldByOther }
}

describe("a contender judges a lease's end by the store's clock, late by the margin", () => {
  it('sees the lease held at expires_at + margin exactly, and free one millisecond later', async () => {
    const { time, lock, heldByOther } = setup()
    const end = heldByOther(5_000)
    const contender = lock('contender')
    time.advance(end + MARGIN - time.now)
    expect(await contender.tryAcquire()).toMatchObject({ status: 'held', holder: { owner: 'other' } })
    expect(await operatorFor(contender).inspect()).toMatchObject({ held: true })
    time.advance(1)
    expect(await operatorFor(contender).inspect()).toMatchObject({ held: false })
    const taken = await contender.tryAcquire()
    expect(taken).toMatchObject({ status: 'acquired' })
    expect(taken.status === 'acquired' && taken.lease.record.token).toBeGreaterThan(4)
  })

  it('sees the lease held when its expires_at passed but the margin did not', async () => {
    const { time, lock, heldByOther } = setup()
    const end = heldByOther(5_000)
    time.advance(end - time.now + 1)
    expect(await lock('contender').tryAcquire()).toMatchObject({ status: 'held' })
  })

  it('reports when a lease ends as the record says: expires_at seconds after the epoch', async () => {
    const { lock, heldByOther } = setup()
    const end = heldByOther(5_000)
    expect((await operatorFor(lock('operator')).inspect())?.expiresAt.getTime()).toBe(end)
  })

  it('takes a released record whatever the store clock reads, even the first second of 1970', async () => {
    const { time, store, lock } = setup()
    store.putRaw(KEY, JSON.stringify({ v: 1, token: 4, expires_at: 0, owner: 'done' }))
    time.now = 500 // a store clock that was never set: still later than a release
    const taken = await lock('contender').tryAcquire()
    expect(taken).toMatchObject({ status: 'acquired' })
    expect(taken.status === 'acquired' && taken.lease.record.token).toBeGreaterThan(4)
  })
})

describe("a holder judges its own end by its own clock, early by the margin and by what it cannot know of the store's", () => {
  // Dates to the millisecond here: the store's clock is known to ±0.5 ms, rounded down to a whole ms.
  it('counts its lease from when it sent the write, less the margin and what the estimate leaves open', async () => {
    const { time, lock } = setup()
    const startedAt = time.now
    const lease = await leaseOf(lock('holder').tryAcquire())
    // The write waits for its token (1 ms here: the store's clock reads to the millisecond), and
    // the lease counts from it: what the estimate leaves open is already spent by then.
    expect(lease?.expiresAt.getTime()).toBe(startedAt + 10_000 - MARGIN)
  })

  it('counts a renewed lease from when the renewal was sent', async () => {
    const { time, lock } = setup()
    const lease = await leaseOf(lock('holder').tryAcquire())
    time.advance(3_000)
    const renewedAt = time.now
    await lease?.renew(20_000)
    // Half the estimate's width (0.5 ms), loosened by 3 s of possible drift (0.6 ms), rounded down.
    expect(lease?.expiresAt.getTime()).toBe(renewedAt + 20_000 - MARGIN - 2)
  })
})
