import { describe, expect, it } from 'vitest'
import { PROBES_PER_TICK } from '../../lib/core/clock-probe.js'
import { ServerClock, type ServerTime } from '../../lib/core/server-clock.js'
import type { LockStore } from '../../lib/core/store.js'
import { Lock, LockClockError } from '../../lib/index.js'
import { MemoryLockStore } from '../../lib/memory/index.js'
import { leaseOf } from '../support/lease-of.js'
import { operatorFor } from '../support/operator-for.js'
import { ManualClock, SimTime } from '../support/sim-clock.js'

const SECOND = 1_000
/** The store's clock in these tests runs this far ahead of the local one. */
const OFFSET = 123_456

/** An answer dated as S3 would date it: the store's time at `answeredAt`, cut to the second. */
const dated = (answeredAt: number) => Math.floor((answeredAt + OFFSET) / SECOND) * SECOND

/** What `clock` knows of the store's time at local time `at`, which it must know. */
function timeAt(clock: ServerClock, at: number): ServerTime {
  const time = clock.at(at)
  if (!time) throw new Error('the store clock should be known by now')
  return time
}

describe("ServerClock: what a lock knows of the store's clock", () => {
  it("knows the store's time to within a second and a round trip after one dated answer", () => {
    const local = new ManualClock(1_800_000_000_250)
    const clock = new ServerClock(local, SECOND)
    const sentAt = local.now()
    const receivedAt = sentAt + 40
    clock.observe(dated(sentAt + 20), sentAt, receivedAt)
    const time = timeAt(clock, receivedAt)
    expect(time.upper - time.lower).toBeCloseTo(SECOND + 40, 6)
    expect(time.lower).toBeLessThanOrEqual(receivedAt + OFFSET)
    expect(time.upper).toBeGreaterThanOrEqual(receivedAt + OFFSET)
  })

  it('narrows to about a round trip once answers have straddled a second boundary', () => {
    const local = new ManualClock(1_800_000_000_000)
    const clock = new ServerClock(local, SECOND)
    // One call every 130 ms, 10 ms each way: their dates tick over at some point.
    for (let sentAt = local.now(); sentAt < local.now() + 3_000; sentAt += 130) {
      clock.observe(dated(sentAt + 10), sentAt, sentAt + 20)
    }
    const at = local.now() + 3_000
    const time = timeAt(clock, at)
    expect(time.lower).toBeLessThanOrEqual(at + OFFSET)
    expect(time.upper).toBeGreaterThanOrEqual(at + OFFSET)
    expect(time.upper - time.lower).toBeLessThanOrEqual(150) // from 1020 ms
  })

  it('loosens what it learned by the drift the clocks may have had since', () => {
    const local = new ManualClock(1_800_000_000_000)
    const clock = new ServerClock(local, SECOND)
    clock.observe(dated(local.now()), local.now(), local.now())
    const width = (at: number) => timeAt(clock, at).upper - timeAt(clock, at).lower
    const now = width(local.now())
    const anHourLater = width(local.now() + 3_600_000)
    expect(anHourLater - now).toBeCloseTo(2 * 3_600_000 * 200e-6, 6) // 200 ppm each way
  })

  it('narrows an hour-old estimate, loosened by the drift since, with a new answer: never past the truth', () => {
    // The new answer comes early or late in the store's second: it bounds the offset from below
    // or from above far less tightly than the loosened old estimate does on the other side.
    for (const phase of [100, 900]) {
      const local = new ManualClock(1_800_000_000_000)
      const clock = new ServerClock(local, SECOND)
      for (let sentAt = local.now(); sentAt < local.now() + 3_000; sentAt += 130) {
        clock.observe(dated(sentAt + 10), sentAt, sentAt + 20)
      }
      const anHourLater = local.now() + 3_600_000
      const sentAt = anHourLater + phase - ((anHourLater + OFFSET) % SECOND)
      clock.observe(dated(sentAt + 5), sentAt, sentAt + 10)
      const time = timeAt(clock, sentAt + 10)
      expect(time.lower, `phase ${phase}`).toBeLessThanOrEqual(sentAt + 10 + OFFSET)
      expect(time.upper, `phase ${phase}`).toBeGreaterThanOrEqual(sentAt + 10 + OFFSET)
    }
  })

  it('starts over from an answer that contradicts all it knew (the store clock was stepped)', () => {
    const local = new ManualClock(1_800_000_000_000)
    const clock = new ServerClock(local, SECOND)
    const t = local.now()
    clock.observe(dated(t), t, t + 10)
    clock.observe(dated(t) + 60_000, t + 20, t + 30) // a minute ahead now
    const time = timeAt(clock, t + 30)
    expect(time.lower).toBeGreaterThanOrEqual(dated(t) + 60_000)
    expect(time.upper - time.lower).toBeLessThanOrEqual(SECOND + 10)
  })

  it('ignores an answer to a call that took too long to say anything', () => {
    const local = new ManualClock(1_800_000_000_000)
    const clock = new ServerClock(local, SECOND)
    const t = local.now()
    clock.observe(dated(t), t, t + 10)
    clock.observe(dated(t) + 60_000, t + 20, t + 20_000) // a frozen Lambda's call
    expect(timeAt(clock, t + 20_000).lower).toBeLessThan(dated(t) + 60_000)
  })

  it("knows nothing of the store's time until an answer was dated", () => {
    const local = new ManualClock(1_800_000_000_000)
    const clock = new ServerClock(local, SECOND)
    clock.observe(undefined, local.now(), local.now())
    expect(clock.known).toBe(false)
    expect(clock.at()).toBeUndefined()
    clock.observe(dated(local.now()), local.now(), local.now() + 10)
    expect(clock.known).toBe(true)
    const time = clock.at()
    expect(time?.lower).toBeLessThanOrEqual(dated(local.now()) + SECOND)
    expect(time?.upper).toBeGreaterThanOrEqual(dated(local.now()))
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
    const lock = new Lock({ store, key: 'jobs/nightly', clock: time.localClock() })
    await expect(leaseOf(lock.tryAcquire())).rejects.toBeInstanceOf(LockClockError)
    await expect(leaseOf(lock.tryAcquire())).rejects.toThrow(/jobs\/nightly.*no date.*trustLocalClock/)
    expect(store.peek('jobs/nightly')).toBeUndefined()
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
    const lease = await leaseOf(lock.tryAcquire())
    expect(time.now).toBe(asked)
    // Its own clock is taken as exact: the token is its time, handed out once that time has
    // passed, 1 ms later, so that a contender acquiring next takes a higher one.
    expect(await lease?.fencingToken()).toBe(asked)
    expect(lease?.record.run).toBe(1)
    expect(time.now).toBe(asked + 1)
    expect(JSON.parse(store.peek('k') ?? '{}').expires_at * 1000).toBe(asked + 10_000)
  })
})

describe('takeover after a crash', () => {
  const TTL = 5_000
  const MARGIN = 1_000

  /**
   * When a contender polling every 100 ms takes over from a holder that crashed once handed its
   * lease, having asked for it at `phase` ms into a second: from when it asked.
   */
  async function takeoverAfter(phase: number): Promise<number> {
    const time = new SimTime()
    time.advance(phase)
    const store = new MemoryLockStore({ clock: time.serverClock, clockResolutionMs: 1_000 })
    const lock = (owner: string) =>
      new Lock({ store, key: 'k', owner, ttlMs: TTL, clockSkewMarginMs: MARGIN, clock: time.localClock() })
    const acquiredAt = time.now
    await leaseOf(lock('crashed').tryAcquire()) // and never heard from again
    const contender = lock('next')
    for (;;) {
      time.advance(100)
      if (await leaseOf(contender.tryAcquire())) return time.now - acquiredAt
    }
  }

  it('happens within a second of ttl + margin from when the crashed holder asked, plus a poll, whatever the phase', async () => {
    const POLL = 100
    // The crashed holder's record ran ttl from its token, the latest the store's clock might read
    // when it wrote: up to the second its one dated answer left open. The new holder's lease is
    // handed out as its write lands.
    const afters: number[] = []
    for (const phase of [0, 1, 250, 500, 750, 999]) {
      const after = await takeoverAfter(phase)
      afters.push(after)
      expect(after, `phase ${phase}`).toBeGreaterThan(TTL + MARGIN)
      expect(after, `phase ${phase}`).toBeLessThanOrEqual(TTL + MARGIN + 1_000 + POLL)
    }
    const sorted = afters.sort((a, b) => a - b)
    const median = ((sorted[2] ?? 0) + (sorted[3] ?? 0)) / 2
    expect(median).toBeLessThanOrEqual(TTL + MARGIN + 1_000)
  })
})

describe("locks of one process share what they learn of a store's clock", () => {
  /** A store over `inner` whose answers lose their date while `stripDates` is set. */
  function dateStripping(inner: MemoryLockStore, clockSource?: object) {
    const strip = <T extends { serverDate?: number }>(answer: T): T => {
      if (!store.stripDates) return answer
      const { serverDate: _, ...rest } = answer
      return rest as T
    }
    const store = {
      stripDates: false as boolean,
      clockResolutionMs: inner.clockResolutionMs,
      ...(clockSource && { clockSource }),
      read: async (key: string) => strip(await inner.read(key)),
      create: async (key: string, body: string) => strip(await inner.create(key, body)),
      replace: async (key: string, body: string, etag: string) => strip(await inner.replace(key, body, etag)),
    } satisfies LockStore & { stripDates: boolean }
    return store
  }

  /** Reads every 130 ms for three seconds: the answers' dates tick over, and the estimate narrows. */
  async function learn(time: SimTime, lock: Lock): Promise<void> {
    for (let elapsed = 0; elapsed < 3_000; elapsed += 130) {
      time.advance(130)
      await operatorFor(lock).inspect()
    }
  }

  it('hands a fresh lock its first token after about a round trip, where a lone lock waits for the store to turn its second', async () => {
    const time = new SimTime()
    const store = new MemoryLockStore({ clock: time.serverClock, clockResolutionMs: SECOND })
    const clock = time.localClock()
    await learn(time, new Lock({ store, key: 'learner', clock }))

    const fresh = new Lock({ store, key: 'fresh', clock })
    const asked = time.now
    await (await leaseOf(fresh.tryAcquire()))?.fencingToken()
    expect(time.now - asked).toBeLessThanOrEqual(130)
    expect(store.requests.probe).toBe(0)

    // A lock judging time by another clock learns on its own: one dated answer, a second wide,
    // narrowed only when its probes see the store's clock turn its next second.
    const alone = new Lock({ store, key: 'alone', clock: time.localClock() })
    const askedAlone = time.now
    const nextSecond = Math.ceil(askedAlone / SECOND) * SECOND // the store's clock is the local one here
    await (await leaseOf(alone.tryAcquire()))?.fencingToken()
    expect(time.now).toBeGreaterThanOrEqual(nextSecond)
    expect(time.now - nextSecond).toBeLessThan(SECOND / PROBES_PER_TICK + 5)
    expect(store.requests.probe).toBeGreaterThan(0)
  })

  it('lets a fresh lock work through answers without a date once the process knows the clock', async () => {
    const time = new SimTime()
    const store = dateStripping(new MemoryLockStore({ clock: time.serverClock, clockResolutionMs: SECOND }))
    const clock = time.localClock()
    await learn(time, new Lock({ store, key: 'learner', clock }))
    store.stripDates = true

    const asked = time.now
    const lease = await leaseOf(new Lock({ store, key: 'fresh', clock }).tryAcquire())
    // Its token is the store's time, as the shared estimate tells it.
    const token = await lease?.fencingToken()
    expect(token).toBeGreaterThanOrEqual(asked)
    expect(token).toBeLessThanOrEqual(time.now)
    await expect(
      leaseOf(new Lock({ store, key: 'other-clock', clock: time.localClock() }).tryAcquire()),
    ).rejects.toThrow(LockClockError)
  })

  it('shares the estimate between stores that name one clock source (one SDK client)', async () => {
    const time = new SimTime()
    const inner = new MemoryLockStore({ clock: time.serverClock, clockResolutionMs: SECOND })
    const client = {}
    const learner = dateStripping(inner, client)
    const clock = time.localClock()
    await learn(time, new Lock({ store: learner, key: 'learner', clock }))

    const sameClient = dateStripping(inner, client)
    sameClient.stripDates = true
    expect((await leaseOf(new Lock({ store: sameClient, key: 'a', clock }).tryAcquire()))?.key).toBe('a')
    const otherClient = dateStripping(inner, {})
    otherClient.stripDates = true
    await expect(leaseOf(new Lock({ store: otherClient, key: 'b', clock }).tryAcquire())).rejects.toThrow(
      LockClockError,
    )
  })
})
