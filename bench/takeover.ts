/**
 * Takeover after a crash: a holder (a new process: it knows the store's clock to a second) asks
 * for the lock, is handed its lease and is never heard from again; a contender polls every
 * 100 ms. How long from the crashed holder's request until the contender has the lock, against
 * the `ttl + margin` that is the least the protocol may wait. (The record's lease runs ttl from
 * its token, the latest the store's clock may read when it was written: up to a second after the
 * request on a first call, the same moment the token's wait used to end before the write.)
 */

import { setTimeout as sleep } from 'node:timers/promises'
import { Lock } from 'lambda-singleton'
import { type LockStore, systemClock } from 'lambda-singleton/extend'
import { leaseOf } from '../test/support/lease-of.js'
import { median } from './measure.js'

export const TAKEOVER_TTL_MS = 5_000
export const TAKEOVER_MARGIN_MS = 1_000
const POLL_MS = 100

export interface TakeoverResult {
  /** Milliseconds from the crashed holder's request to takeover, one per trial, sorted. */
  readonly afterMs: readonly number[]
  readonly medianMs: number
}

/** `trials` crashes at once, on keys of their own, started at different phases of the second. */
export async function measureTakeover(store: LockStore, label: string, trials = 10): Promise<TakeoverResult> {
  const afterMs = await Promise.all(
    Array.from({ length: trials }, async (_, trial) => {
      await sleep(Math.floor((trial * 1_000) / trials) + Math.floor(Math.random() * 50))
      const key = `bench/takeover-${label}-${Date.now()}-${trial}`
      const options = { store, key, ttlMs: TAKEOVER_TTL_MS, clockSkewMarginMs: TAKEOVER_MARGIN_MS }
      // Each with a clock of its own, as two processes: neither knows what the other learned
      // of the store's clock.
      const processLock = (owner: string) => new Lock({ ...options, owner, clock: { ...systemClock } })
      const startedAt = performance.now()
      if (!(await leaseOf(processLock('crashed').tryAcquire()))) throw new Error('not acquired')
      const contender = processLock('next')
      for (;;) {
        await sleep(POLL_MS)
        if (await leaseOf(contender.tryAcquire())) return performance.now() - startedAt
      }
    }),
  )
  const sorted = afterMs.sort((a, b) => a - b)
  return { afterMs: sorted, medianMs: median(sorted) }
}
