/**
 * Takeover after a crash: a holder is handed its lease and is never heard from again; a
 * contender polls every 100 ms. How long from the hand-out (a lease starts when its token is
 * handed out, after the wait for the store's clock) until the contender has the lock, against the
 * `ttl + margin` that is the least the protocol may wait.
 */

import { setTimeout as sleep } from 'node:timers/promises'
import { Lock } from 'lambda-singleton'
import { type LockStore, systemClock } from 'lambda-singleton/extend'
import { leaseOf } from '../test/support/lease-of.js'

export const TAKEOVER_TTL_MS = 5_000
export const TAKEOVER_MARGIN_MS = 1_000
const POLL_MS = 100

export interface TakeoverResult {
  /** Milliseconds from the hand-out of the crashed holder's lease to takeover, one per trial, sorted. */
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
      if (!(await leaseOf(processLock('crashed').tryAcquire()))) throw new Error('not acquired')
      const startedAt = performance.now()
      const contender = processLock('next')
      for (;;) {
        await sleep(POLL_MS)
        if (await leaseOf(contender.tryAcquire())) return performance.now() - startedAt
      }
    }),
  )
  const sorted = afterMs.sort((a, b) => a - b)
  return { afterMs: sorted, medianMs: sorted[Math.floor(sorted.length / 2)] ?? Number.NaN }
}
