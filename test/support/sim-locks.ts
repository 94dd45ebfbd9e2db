import type { LockRecord } from '../../lib/extend.js'
import type { LockOptions } from '../../lib/index.js'
import { Lock } from '../../lib/index.js'
import { MemoryLockStore } from '../../lib/memory/index.js'
import { SimTime } from './sim-clock.js'

/**
 * Contenders for one key, each a process of its own, on an in-memory store and simulated time
 * (the store's clock answers to the second, as S3's `Date` does): the setup most core specs share.
 * Leases of 10 s with a margin of 1 s, and jitter fixed, unless `options` say otherwise.
 */
export function simLocks(key: string, options: Partial<Omit<LockOptions, 'store' | 'key' | 'owner'>> = {}) {
  const time = new SimTime()
  const store = new MemoryLockStore({ clock: time.serverClock, clockResolutionMs: 1_000 })
  const lock = (owner: string) =>
    new Lock({
      store,
      key,
      owner,
      ttlMs: 10_000,
      clockSkewMarginMs: 1_000,
      clock: time.localClock(),
      random: () => 0.5,
      ...options,
    })
  /** The record as stored, or `null`. */
  const record = (): LockRecord => JSON.parse(store.peek(key) ?? 'null')
  /** Conditional writes sent so far (creates and replaces). */
  const writes = () => store.requests.create + store.requests.replace
  return { time, store, lock, record, writes }
}
