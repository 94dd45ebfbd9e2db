import { describe, expect, it } from 'vitest'
import { ServerClock } from '../../lib/core/server-clock.js'
import { Lock, LockClockError } from '../../lib/index.js'
import { MemoryLockStore } from '../../lib/memory/index.js'
import { ManualClock, SimTime } from '../support/sim-clock.js'

const SECOND = 1_000
/** The store's clock in these tests runs this far ahead of the local one. */
const OFFSET = 123_456

/** An answer dated as S3 would date it: the store's time at `answeredAt`, cut to the second. */
const dated = (answeredAt: number) => Math.floor((answeredAt + OFFSET) / SECOND) * SECOND

describe("ServerClock: what a lock knows of the store's clock", () => {
  it("knows the store's time to within a second and a round trip after one dated answer", () => {
    const local = new ManualClock(1_800_000_000_250)
    const clock = new ServerClock(local, SECOND, 'k')
    const sentAt = local.now()
    const receivedAt = sentAt + 40
    clock.observe(dated(sentAt + 20), sentAt, receivedAt)
    const time = clock.at(receivedAt)
    expect(time.upper - time.lower).toBeCloseTo(SECOND + 40, 6)
    expect(time.lower).toBeLessThanOrEqual(receivedAt + OFFSET)
    expect(time.upper).toBeGreaterThanOrEqual(receivedAt + OFFSET)
  })

  it('narrows to about a round trip once answers have straddled a second boundary', () => {
    const local = new ManualClock(1_800_000_000_000)
    const clock = new ServerClock(local, SECOND, 'k')
    // One call every 130 ms, 10 ms each way: their dates tick over at some point.
    for (let sentAt = local.now(); sentAt < local.now() + 3_000; sentAt += 130) {
      clock.observe(dated(sentAt + 10), sentAt, sentAt + 20)
    }
    const at = local.now() + 3_000
    const time = clock.at(at)
    expect(time.lower).toBeLessThanOrEqual(at + OFFSET)
    expect(time.upper).toBeGreaterThanOrEqual(at + OFFSET)
    expect(time.upper - time.lower).toBeLessThanOrEqual(150) // from 1020 ms
  })

  it('loosens what it learned by the drift the clocks may have had since', () => {
    const local = new ManualClock(1_800_000_000_000)
    const clock = new ServerClock(local, SECOND, 'k')
    clock.observe(dated(local.now()), local.now(), local.now())
    const width = (at: number) => clock.at(at).upper - clock.at(at).lower
    const now = width(local.now())
    const anHourLater = width(local.now() + 3_600_000)
    expect(anHourLater - now).toBeCloseTo(2 * 3_600_000 * 200e-6, 6) // 200 ppm each way
  })

  it('starts over from an answer that contradicts all it knew (the store clock was stepped)', () => {
    const local = new ManualClock(1_800_000_000_000)
    const clock = new ServerClock(local, SECOND, 'k')
    const t = local.now()
    clock.observe(dated(t), t, t + 10)
    clock.observe(dated(t) + 60_000, t + 20, t + 30) // a minute ahead now
    const time = clock.at(t + 30)
    expect(time.lower).toBeGreaterThanOrEqual(dated(t) + 60_000)
    expect(time.upper - time.lower).toBeLessThanOrEqual(SECOND + 10)
  })

  it('ignores an answer to a call that took too long to say anything', () => {
    const local = new ManualClock(1_800_000_000_000)
    const clock = new ServerClock(local, SECOND, 'k')
    const t = local.now()
    clock.observe(dated(t), t, t + 10)
    clock.observe(dated(t) + 60_000, t + 20, t + 20_000) // a frozen Lambda's call
    expect(clock.at(t + 20_000).lower).toBeLessThan(dated(t) + 60_000)
  })

  it('refuses to tell the time before any answer was dated, unless told to trust the local clock', () => {
    const local = new ManualClock(1_800_000_000_000)
    const refusing = new ServerClock(local, SECOND, 'jobs/nightly')
    refusing.observe(undefined, local.now(), local.now())
    expect(() => refusing.at()).toThrow(LockClockError)
    expect(() => refusing.at()).toThrow(/jobs\/nightly.*no date.*trustLocalClock/)
    const trusting = new ServerClock(local, SECOND, 'k', true)
    expect(trusting.at()).toEqual({ lower: local.now(), upper: local.now(), mid: local.now(), halfWidth: 0 })
  })
})

describe('a lock on a store whose answers carry no date', () => {
  it('fails with LockClockError and writes nothing', async () => {
    const time = new SimTime()
    const store = new MemoryLockStore({
      clock: time.serverClock,
      clockResolutionMs: 1_000,
      reportServerDate: false,
    })
    const lock = new Lock({ store, key: 'k', clock: time.localClock() })
    await expect(lock.tryAcquire()).rejects.toBeInstanceOf(LockClockError)
    expect(store.peek('k')).toBeUndefined()
  })

  it('judges by its own clock when told to trust it', async () => {
    const time = new SimTime()
    const store = new MemoryLockStore({
      clock: time.serverClock,
      clockResolutionMs: 1_000,
      reportServerDate: false,
    })
    const lock = new Lock({ store, key: 'k', clock: time.localClock(), trustLocalClock: true, ttlMs: 10_000 })
    const asked = time.now
    const lease = await lock.tryAcquire()
    // Its own clock is taken as exact: the token is its time, handed out with no wait.
    expect(lease?.token).toBe(asked)
    expect(lease?.record.run).toBe(1)
    expect(time.now).toBe(asked)
    expect(JSON.parse(store.peek('k') ?? '{}').expires_at * 1000).toBe(time.now + 10_000)
  })
})

describe('takeover after a crash', () => {
  const TTL = 5_000
  const MARGIN = 1_000

  /** When a contender polling every 100 ms takes over from a holder that acquired at `phase` ms into a second. */
  async function takeoverAfter(phase: number): Promise<number> {
    const time = new SimTime()
    time.advance(phase)
    const store = new MemoryLockStore({ clock: time.serverClock, clockResolutionMs: 1_000 })
    const lock = (owner: string) =>
      new Lock({ store, key: 'k', owner, ttlMs: TTL, clockSkewMarginMs: MARGIN, clock: time.localClock() })
    const acquiredAt = time.now
    await lock('crashed').tryAcquire() // and never heard from again
    const contender = lock('next')
    for (;;) {
      time.advance(100)
      if (await contender.tryAcquire()) return time.now - acquiredAt
    }
  }

  it('happens within half a second of ttl + margin, plus a poll and the wait for the new token, whatever the phase', async () => {
    const POLL = 100
    // The contender hands its token out once the store's clock has surely passed it: as long as
    // its estimate is wide, which polling every 100 ms narrows to about that.
    const TOKEN_WAIT = 110
    const afters: number[] = []
    for (const phase of [0, 1, 250, 500, 750, 999]) {
      const after = await takeoverAfter(phase)
      afters.push(after)
      expect(after, `phase ${phase}`).toBeGreaterThan(TTL + MARGIN - 500)
      expect(after, `phase ${phase}`).toBeLessThanOrEqual(TTL + MARGIN + 500 + POLL + TOKEN_WAIT)
    }
    const sorted = afters.sort((a, b) => a - b)
    const median = ((sorted[2] ?? 0) + (sorted[3] ?? 0)) / 2
    expect(median).toBeLessThanOrEqual(TTL + MARGIN + 500)
  })
})
