import { describe, expect, it } from 'vitest'
import type { StoreCallOptions } from '../../lib/core/store.js'
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

describe('a write under way when the wait runs out', () => {
  /**
   * A store whose writes land at once and whose answers then take `answerMs` to come back,
   * abandoned (as an HTTP client abandons a request) when the call's signal aborts meanwhile.
   */
  function slowAnswers(clock: ManualClock, answerMs: number): ScriptedStore {
    const store = new ScriptedStore({ clock })
    const late = async <T>(landed: Promise<T>, options?: StoreCallOptions): Promise<T> => {
      const answer = await landed
      await clock.sleep(answerMs, options?.signal)
      return answer
    }
    const { create, replace } = store.memory
    store.memory.create = (key, body, options) => late(create.call(store.memory, key, body, options), options)
    store.memory.replace = (key, body, etag, options) =>
      late(replace.call(store.memory, key, body, etag, options), options)
    return store
  }

  it("is not abandoned: a write that landed is the caller's lease, not a lock nobody holds", async () => {
    const clock = new ManualClock()
    const store = slowAnswers(clock, 800)
    const lock = (owner: string) =>
      new Lock({ store, key: KEY, owner, ttlMs: 60_000, clockSkewMarginMs: 0, clock, random: () => 0.5 })
    // Held by someone whose lease ends 150 ms from now: b's try after it lands, and its answer
    // comes back after b's wait of 700 ms is over.
    store.memory.putRaw(
      KEY,
      JSON.stringify({ v: 1, token: 3, expires_at: (clock.now() + 150) / 1000, owner: 'other' }),
    )
    const result = await clock.run(lock('b').tryAcquire({ waitMs: 700 }))
    const record = JSON.parse(store.memory.peek(KEY) ?? '{}')
    expect(record.owner).toBe('b')
    expect(result.status).toBe('acquired')
  })
})
