import { describe, expect, it } from 'vitest'
import { Lock, LockStoreError } from '../../lib/index.js'
import { ScriptedStore } from '../support/scripted-store.js'
import { ManualClock } from '../support/sim-clock.js'

/**
 * The end of a wait (`attempt` or `acquire` with `waitMs`) is one timer: it must go when the wait
 * ends early, or a CLI that got its lock in a second would not exit until the whole wait had
 * passed. Simulated time: the clock counts the timers still scheduled.
 */
const KEY = 'jobs/waited'
const WAIT_MS = 60_000

function setup() {
  const clock = new ManualClock()
  const store = new ScriptedStore({ clock })
  const lock = (owner: string) =>
    new Lock({ store, key: KEY, owner, ttlMs: 10_000, clockSkewMarginMs: 1_000, clock, random: () => 0.5 })
  /** Someone else's lease, ending `ms` from now by the store's clock. */
  const heldFor = (ms: number) =>
    store.memory.putRaw(
      KEY,
      JSON.stringify({ v: 1, token: 3, expires_at: (clock.now() + ms) / 1000, owner: 'other' }),
    )
  return { clock, store, lock, heldFor }
}

describe('the end of a wait', () => {
  it('leaves no timer behind when the lock is taken before it', async () => {
    const { clock, lock, heldFor } = setup()
    heldFor(5_000)
    const start = clock.now()
    const result = await clock.run(lock('a').tryAcquire({ waitMs: WAIT_MS }))
    if (result.status !== 'acquired') throw new Error(`expected the lock, got ${result.status}`)
    expect(clock.now() - start).toBeLessThan(WAIT_MS)
    await clock.run(result.lease.release())
    expect(clock.pending).toBe(0)
  })

  it('leaves no timer behind when the store fails during it', async () => {
    const { clock, store, lock, heldFor } = setup()
    heldFor(3_600_000)
    store.script('read', 'ok', 'fatal')
    const error = await clock.run(lock('a').tryAcquire({ waitMs: WAIT_MS })).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(LockStoreError)
    expect((error as LockStoreError).retryable).toBe(false)
    expect(clock.pending).toBe(0)
  })

  it('is the whole wait from the call, whatever the tries cost: the answer comes at its end', async () => {
    const { clock, lock, heldFor } = setup()
    heldFor(3_600_000)
    const start = clock.now()
    expect(await clock.run(lock('a').tryAcquire({ waitMs: WAIT_MS }))).toMatchObject({ status: 'held' })
    expect(clock.now() - start).toBe(WAIT_MS)
    expect(clock.pending).toBe(0)
  })
})
