import { describe, expect, it } from 'vitest'
import { keepAlive, Lock } from '../../lib/index.js'
import { leaseOf } from '../support/lease-of.js'
import { ScriptedStore } from '../support/scripted-store.js'
import { ManualClock } from '../support/sim-clock.js'

/** keepAlive's start and stop: when it beats, when it must not, and what it leaves behind. */
const KEY = 'jobs/beating'

async function setup() {
  const clock = new ManualClock()
  const store = new ScriptedStore({ clock, clockResolutionMs: 1 })
  const lock = (owner = 'holder') =>
    new Lock({ store, key: KEY, owner, ttlMs: 6_000, clockSkewMarginMs: 1_000, clock, random: () => 0.5 })
  const lease = await clock.run(leaseOf(lock().tryAcquire()))
  if (!lease) throw new Error('expected the lock to be free')
  return { clock, store, lock, lease }
}

describe('keepAlive', () => {
  it('sends no renewal after a stop, even when one was in flight at the stop', async () => {
    const { clock, store, lease } = await setup()
    let land: () => void = () => {}
    store.script('replace', () => new Promise<undefined>((resolve) => (land = () => resolve(undefined))))
    const stop = keepAlive(lease, { everyMs: 1_000, clock })
    await clock.advance(1_000)
    expect(store.count('replace')).toBe(1) // on its way
    stop()
    land()
    await clock.advance(10_000)
    expect(store.count('replace')).toBe(1)
  })

  it('leaves no timer behind once stopped', async () => {
    const { clock, lease } = await setup()
    const stop = keepAlive(lease, { everyMs: 1_000, clock })
    await lease.release() // the lease's own watchdog is gone: only the heartbeat's timer is left
    expect(clock.pending).toBe(1)
    stop()
    expect(clock.pending).toBe(0)
  })

  it('schedules nothing for a lease that is over already', async () => {
    const { clock, lease } = await setup()
    await lease.release()
    keepAlive(lease, { everyMs: 1_000, clock })
    expect(clock.pending).toBe(0)
  })

  it('schedules nothing when the time it may renew until has passed', async () => {
    const { clock, store, lease } = await setup()
    keepAlive(lease, { everyMs: 1_000, clock, until: clock.now() })
    await clock.advance(3_000)
    expect(store.count('replace')).toBe(0)
  })

  it('does not report a lost lease as a failed renewal, and stops', async () => {
    const { clock, store, lease } = await setup()
    store.memory.delete(KEY)
    const failures: unknown[] = []
    keepAlive(lease, { everyMs: 1_000, clock, onError: (error) => failures.push(error) })
    await clock.advance(10_000)
    expect(lease.lostError).toMatchObject({ reason: 'deleted' })
    expect(failures).toEqual([])
    expect(store.count('replace')).toBe(1)
  })

  it('retries a failed renewal after half a period, with no onError to tell', async () => {
    const { clock, store, lease } = await setup()
    store.script('replace', 'fatal')
    keepAlive(lease, { everyMs: 2_000, clock })
    await clock.advance(3_000)
    expect(store.count('replace')).toBe(2) // at 2 s (failed), then at 3 s
    expect(lease.isHeld).toBe(true)
  })

  it('asks each renewal for the ttl it is given, and else keeps the lease’s own', async () => {
    const { clock, store, lease } = await setup()
    const ttl = () => JSON.parse(store.memory.peek(KEY) ?? 'null').ttl_ms
    const stop = keepAlive(lease, { everyMs: 1_000, ttlMs: 9_000, clock })
    await clock.advance(1_000)
    expect(ttl()).toBe(9_000)
    stop()
    keepAlive(lease, { everyMs: 1_000, clock })
    await clock.advance(1_000)
    expect(ttl()).toBe(9_000)
  })
})
