import { describe, expect, it } from 'vitest'
import { Lock, LockOptionsError, LockStoreError } from '../../lib/index.js'
import { MemoryLockStore } from '../../lib/memory/index.js'
import { leaseOf } from '../support/lease-of.js'
import { SimTime } from '../support/sim-clock.js'

const KEY = 'jobs/until'
const SECOND = 1_000

function setup() {
  const time = new SimTime()
  const store = new MemoryLockStore({ clock: time.serverClock, clockResolutionMs: SECOND })
  const lock = (owner: string, clockSkewMarginMs = 1_000) =>
    new Lock({ store, key: KEY, owner, ttlMs: 10_000, clockSkewMarginMs, clock: time.localClock() })
  return { time, store, lock }
}

describe('a lease held until a time (holdUntil), as the middleware holds one to the invocation deadline', () => {
  it('refuses a holdUntil that is not a time to come, and writes nothing', async () => {
    const { time, store, lock } = setup()
    for (const holdUntil of [time.now, time.now - 1, Number.NaN, Number.POSITIVE_INFINITY]) {
      await expect(leaseOf(lock('a').tryAcquire({ holdUntil })), `holdUntil ${holdUntil}`).rejects.toThrow(
        LockOptionsError,
      )
    }
    expect(store.requests).toEqual({ read: 0, create: 0, replace: 0, probe: 0, take: 0 })
    const until = time.now + 2_000
    const lease = await leaseOf(lock('a').tryAcquire({ holdUntil: until }))
    expect(lease?.expiresAt.getTime()).toBe(until)
  })

  it('writes nothing when holdUntil passes before the write could go out (a slow read outlasted it)', async () => {
    const { time, store, lock } = setup()
    const read = store.read.bind(store)
    store.read = async (key, options) => {
      time.advance(50)
      return read(key, options)
    }
    const error = await lock('a')
      .tryAcquire({ holdUntil: time.now + 10 })
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(LockStoreError)
    expect(String(error)).toMatch(
      /passed before it could be written; nothing was written|nothing was written/,
    )
    expect(store.peek('jobs/until')).toBeUndefined()
  })

  it('ends its lease at holdUntil, not a ttl later', async () => {
    const { time, lock } = setup()
    const until = time.now + 30_000
    const lease = await leaseOf(lock('a').tryAcquire({ holdUntil: until }))
    expect(lease?.expiresAt.getTime()).toBe(until)
  })

  it('waits for a held lock no longer than holdUntil: a lease got later would already be over', async () => {
    const { time, lock } = setup()
    await leaseOf(lock('holder').tryAcquire())
    const start = time.now
    const result = await lock('waiter').tryAcquire({ waitMs: 20_000, holdUntil: start + 2_000 })
    expect(result.status).toBe('held')
    expect(time.now - start).toBeLessThanOrEqual(2_000)
  })

  it('is not taken over before holdUntil, even when its holder knew the store time only to a second', async () => {
    const { time, lock } = setup()
    // The holder's only dated answer comes just before the store's second ticks over: its
    // estimate of the store's time spans a whole second, nearly all of it in the past.
    time.advance(SECOND - (time.now % SECOND) - 1)
    const until = time.now + 5_000
    const margin = 200
    expect((await leaseOf(lock('holder', margin).tryAcquire({ holdUntil: until })))?.owner).toBe('holder')
    // A contender that polls every 50 ms knows the store's time closely by then.
    const contender = lock('contender', margin)
    while (time.now < until) {
      expect(await leaseOf(contender.tryAcquire()), `${until - time.now} ms before holdUntil`).toBeNull()
      time.advance(50)
    }
  })

  it('is handed out as its write lands, whole; its token comes after its wait, however little time that leaves', async () => {
    const { time, store, lock } = setup()
    const until = time.now + 1_300
    const lease = await leaseOf(lock('a').tryAcquire({ holdUntil: until }))
    expect(lease?.remainingMs).toBeGreaterThan(1_300 - 50)
    expect(store.requests).toMatchObject({ create: 1, replace: 0 })
    expect(lease?.expiresAt.getTime()).toBe(until)
    // A fresh lock knows the store time to a second: its token waits about that long.
    await lease?.fencingToken()
    expect(lease?.remainingMs).toBeLessThan(1_300 / 4)
  })
})
