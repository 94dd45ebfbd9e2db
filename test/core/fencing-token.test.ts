import { describe, expect, it } from 'vitest'
import { Lock, LockLostError } from '../../lib/index.js'
import { leaseOf } from '../support/lease-of.js'
import { ScriptedStore } from '../support/scripted-store.js'
import { ManualClock } from '../support/sim-clock.js'

/**
 * `lease.fencingToken()`: the lease is handed out as its write lands, its token only once the
 * store's clock has surely passed it (docs/guarantees.md, I2), and only to code that asks.
 */
const KEY = 'jobs/fenced'
const SECOND = 1_000

function setup() {
  // The store's clock is the test's; its Date counts whole seconds, and the lock's first answer
  // comes as a second begins: that lock knows the store's time to a second, no better.
  const clock = new ManualClock()
  const store = new ScriptedStore({ clock })
  const lock = (owner = 'holder', ttlMs = 10_000) =>
    new Lock({ store, key: KEY, owner, ttlMs, clockSkewMarginMs: 1_000, clock, random: () => 0.5 })
  return { clock, store, lock }
}

describe('lease.fencingToken()', () => {
  it("resolves the written token once the store's clock has passed it, sending probes only while it is awaited", async () => {
    const { clock, store, lock } = setup()
    const lease = await clock.run(leaseOf(lock().tryAcquire()))
    const written = lease?.record.token ?? Number.NaN
    expect(clock.now()).toBeLessThanOrEqual(written)
    expect(store.memory.requests.probe).toBe(0)
    const token = await clock.run(lease?.fencingToken() ?? Promise.reject(new Error('no lease')))
    expect(token).toBe(written)
    expect(clock.now()).toBeGreaterThan(token)
    expect(store.memory.requests.probe).toBeGreaterThan(0)
  })

  it('gives every caller the same token after one wait', async () => {
    const { clock, store, lock } = setup()
    const lease = await clock.run(leaseOf(lock().tryAcquire()))
    if (!lease) throw new Error('no lease')
    const alone = new ManualClock()
    const reference = new ScriptedStore({ clock: alone })
    const single = await alone.run(
      leaseOf(new Lock({ store: reference, key: KEY, clock: alone }).tryAcquire()),
    )
    await alone.run(single?.fencingToken() ?? Promise.resolve(0))
    const tokens = await clock.run(
      Promise.all([lease.fencingToken(), lease.fencingToken(), lease.fencingToken()]),
    )
    expect(new Set(tokens)).toEqual(new Set([lease.record.token]))
    // Three callers, one wait: no more probes than one caller's.
    expect(store.memory.requests.probe).toBe(reference.memory.requests.probe)
  })

  it('sends no request for a token nobody reads, however long the lease is held', async () => {
    const { clock, store, lock } = setup()
    const lease = await clock.run(leaseOf(lock().tryAcquire()))
    const before = { ...store.memory.requests }
    await clock.advance(5 * SECOND) // across five turns of the store's second
    expect(store.memory.requests).toEqual(before)
    await clock.run(lease?.release() ?? Promise.resolve())
    expect(store.memory.requests).toMatchObject({ read: 1, create: 1, replace: 1, probe: 0 })
  })

  it('rejects LockLostError when the lease is lost while its token is awaited', async () => {
    const { clock, lock } = setup()
    // A lease held until 300 ms from now: over before the store's clock can pass its token.
    const lease = await clock.run(leaseOf(lock().tryAcquire({ holdUntil: clock.now() + 300 })))
    const error = await clock.run(lease?.fencingToken().catch((e: unknown) => e) ?? Promise.resolve())
    expect(error).toBeInstanceOf(LockLostError)
    expect(error).toMatchObject({ reason: 'expired', key: KEY })
  })

  it('rejects LockLostError for a released lease, whose token may not be ready', async () => {
    const { clock, lock } = setup()
    const lease = await clock.run(leaseOf(lock().tryAcquire()))
    await clock.run(lease?.release() ?? Promise.resolve())
    const error = await clock.run(lease?.fencingToken().catch((e: unknown) => e) ?? Promise.resolve())
    expect(error).toBeInstanceOf(LockLostError)
    expect(error).toMatchObject({ reason: 'released' })
  })

  it("stops waiting at the caller's signal, with its reason, and a later call still gets the token", async () => {
    const { clock, lock } = setup()
    const lease = await clock.run(leaseOf(lock().tryAcquire()))
    if (!lease) throw new Error('no lease')
    const caller = new AbortController()
    const reason = new Error('the handler gave up')
    const first = lease.fencingToken({ signal: caller.signal }).catch((e: unknown) => e)
    caller.abort(reason)
    expect(await first).toBe(reason)
    expect(await clock.run(lease.fencingToken())).toBe(lease.record.token)
  })
})
