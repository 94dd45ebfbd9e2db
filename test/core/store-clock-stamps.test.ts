import { describe, expect, it } from 'vitest'
import { Lock } from '../../lib/index.js'
import { MemoryLockStore } from '../../lib/memory/index.js'
import { leaseOf } from '../support/lease-of.js'
import { SimTime } from '../support/sim-clock.js'

const SECOND = 1_000

describe("a lock stamps and judges leases by the store's clock, whatever its own clock says", () => {
  const TTL = 10_000
  const setup = (options: { offsetMs?: number; drift?: number } = {}) => {
    const time = new SimTime()
    const store = new MemoryLockStore({ clock: time.serverClock, clockResolutionMs: 1_000 })
    const lock = (owner: string, clock = time.localClock(options.offsetMs, options.drift)) =>
      new Lock({ store, key: 'k', owner, ttlMs: TTL, clockSkewMarginMs: 1_000, clock, random: () => 0.5 })
    const record = () => JSON.parse(store.peek('k') ?? 'null')
    return { time, lock, record }
  }

  it('stamps expires_at and acquired_at from the store clock when its own clock is an hour behind', async () => {
    const { time, lock, record } = setup({ offsetMs: -3_600_000 })
    const sentAt = time.now
    await leaseOf(lock('late-clock').tryAcquire())
    expect(record().expires_at * 1000).toBeGreaterThanOrEqual(sentAt + TTL)
    expect(record().expires_at * 1000).toBeLessThanOrEqual(sentAt + TTL + SECOND)
    expect(record().acquired_at * 1000).toBeGreaterThanOrEqual(sentAt)
    // Stamped when the write goes out, after the token's wait (up to the second the estimate spans).
    expect(record().acquired_at * 1000).toBeLessThanOrEqual(sentAt + 2 * SECOND)
    const contender = lock('on-time', time.localClock())
    time.advance(TTL - 1)
    expect(await leaseOf(contender.tryAcquire())).toBeNull()
  })

  it('keeps its stamps honest while its clock runs 1 % slow, by learning from every renewal', async () => {
    const { time, lock, record } = setup({ drift: -0.01 })
    const lease = await leaseOf(lock('slow-clock').tryAcquire())
    for (let beat = 0; beat < 200; beat++) {
      time.advance(2_500)
      const sentAt = time.now
      await lease?.renew()
      // Stamped from the middle of what it knows of the store's clock: within the Date's
      // resolution of the truth, however far its own clock has drifted.
      expect(Math.abs(record().expires_at * 1000 - (sentAt + TTL))).toBeLessThanOrEqual(SECOND)
    }
  })
})
