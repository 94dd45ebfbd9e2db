import { describe, expect, it } from 'vitest'
import { ServerClock } from '../../lib/core/clock.js'
import { Lock } from '../../lib/index.js'
import { MemoryLockStore } from '../../lib/memory/index.js'
import { ManualClock, SimTime } from '../support/sim-clock.js'

const SECOND = 1_000

describe("ServerClock: what a response's Date says of the store's clock", () => {
  /** Our clock reads 0 + `at`; the store's is far ahead, as an epoch clock is of a fresh ManualClock. */
  const setup = () => {
    const local = new ManualClock(0)
    return { local, server: new ServerClock(local, SECOND) }
  }

  it('falls back to the local clock before any answer carried a date', async () => {
    const { local, server } = setup()
    await local.advance(1_234)
    server.observe(undefined, 0, 1_234)
    expect(server.upperNow()).toBe(1_234)
    expect(server.lowerNow()).toBe(1_234)
  })

  it("bounds the store's clock by the Date's whole second and the request's send and receive times", async () => {
    const { local, server } = setup()
    // Sent at 100, answered at 300, the Date says 50 000 (anywhere in [50 000, 51 000) really).
    await local.advance(300)
    server.observe(50_000, 100, 300)
    // Latest: the second fully elapsed, and the answer written as early as the request was sent.
    expect(server.upperNow()).toBe(50_000 + SECOND + (300 - 100))
    // Earliest: the second just begun, and the answer written as late as it was received.
    expect(server.lowerNow()).toBe(50_000)
    await local.advance(2_000)
    expect(server.upperNow()).toBe(51_200 + 2_000)
    expect(server.lowerNow()).toBe(50_000 + 2_000)
  })

  it('learns from every answer: the latest sample replaces the one before', async () => {
    const { local, server } = setup()
    server.observe(50_000, 0, 0)
    await local.advance(10_000)
    server.observe(70_000, 10_000, 10_000) // the store's clock moved 20 s while ours moved 10 s
    expect(server.lowerNow()).toBe(70_000)
    expect(server.upperNow()).toBe(71_000)
  })

  it('ignores a later answer that took longer than 5 s to come back (a frozen process), but takes one of 5 s', async () => {
    const { local, server } = setup()
    server.observe(50_000, 0, 0)
    await local.advance(20_000)
    server.observe(90_000, 14_999, 20_000) // 5 001 ms round trip: says too little
    expect(server.lowerNow()).toBe(70_000)
    server.observe(90_000, 15_000, 20_000) // exactly 5 s: still a sample
    expect(server.lowerNow()).toBe(90_000)
    expect(server.upperNow()).toBe(90_000 + SECOND + 5_000)
  })

  it('takes the first answer however long it took, rather than trust the local clock', async () => {
    const { local, server } = setup()
    await local.advance(60_000)
    server.observe(500_000, 0, 60_000)
    expect(server.lowerNow()).toBe(500_000)
    expect(server.upperNow()).toBe(500_000 + SECOND + 60_000)
  })
})

describe("a lock stamps and judges leases by the store's clock, whatever its own clock says", () => {
  const TTL = 10_000
  const setup = (options: { offsetMs?: number; drift?: number } = {}) => {
    const time = new SimTime()
    const store = new MemoryLockStore({ clock: time.serverClock })
    const lock = (owner: string, clock = time.localClock(options.offsetMs, options.drift)) =>
      new Lock({ store, key: 'k', owner, ttlMs: TTL, clockSkewMarginMs: 1_000, clock, random: () => 0.5 })
    const record = () => JSON.parse(store.peek('k') ?? 'null')
    return { time, lock, record }
  }

  it('stamps expires_at and acquired_at from the store clock when its own clock is an hour behind', async () => {
    const { time, lock, record } = setup({ offsetMs: -3_600_000 })
    const sentAt = time.now
    await lock('late-clock').tryAcquire()
    expect(record().expires_at * 1000).toBeGreaterThanOrEqual(sentAt + TTL)
    expect(record().expires_at * 1000).toBeLessThanOrEqual(sentAt + TTL + SECOND)
    expect(record().acquired_at * 1000).toBeGreaterThanOrEqual(sentAt)
    expect(record().acquired_at * 1000).toBeLessThanOrEqual(sentAt + SECOND)
    const contender = lock('on-time', time.localClock())
    time.advance(TTL - 1)
    expect(await contender.tryAcquire()).toBeNull()
  })

  it('keeps its stamps honest while its clock runs 1 % slow, by learning from every renewal', async () => {
    const { time, lock, record } = setup({ drift: -0.01 })
    const lease = await lock('slow-clock').tryAcquire()
    for (let beat = 0; beat < 200; beat++) {
      time.advance(2_500)
      const sentAt = time.now
      await lease?.renew()
      expect(record().expires_at * 1000).toBeGreaterThanOrEqual(sentAt + TTL)
    }
  })
})
