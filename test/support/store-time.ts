import { expect } from 'vitest'
import type { LockStore } from '../../lib/core/store.js'

/**
 * What one answer of a store says of its clock: it read at least `lower` and less than `upper`
 * (epoch ms) while it answered. Taken from the store itself, so that it holds against any engine,
 * whatever the clock of the machine running the tests says.
 */
export interface StoreTime {
  readonly lower: number
  readonly upper: number
}

/** Asks the store the time: the date of its answer to a read, widened by the date's resolution. */
export async function storeTime(store: LockStore, key = 'store-time/probe'): Promise<StoreTime> {
  const { serverDate } = await store.read(key)
  if (serverDate === undefined) throw new Error('the store dated no answer: it cannot tell the time')
  return { lower: serverDate, upper: serverDate + store.clockResolutionMs }
}

/**
 * Tokens follow the store's clock: an acquisition made after `before` takes at least the store's
 * time then, and its token is handed out (`fencingToken()`) only once that clock has passed it,
 * so before `after`, taken once it was handed out.
 */
export function expectTokenOfStoreTime(token: number | undefined, before: StoreTime, after: StoreTime): void {
  expect(token).toBeGreaterThanOrEqual(before.lower)
  expect(token).toBeLessThan(after.upper)
}
