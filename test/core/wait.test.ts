import { describe, expect, it } from 'vitest'
import type { LockStore, ReadResult, StoreCallOptions, WriteResult } from '../../lib/extend.js'
import { Lock, LockStoreError, LockTimeoutError } from '../../lib/index.js'
import { MemoryLockStore } from '../../lib/memory/index.js'
import { leaseOf } from '../support/lease-of.js'

const KEY = 'jobs/nightly'
/** How far past its wait a call may end: scheduling, not store time. */
const GRACE_MS = 1_000

/** A store on the real clock that stops answering on demand, until the caller's signal aborts. */
class HangingStore implements LockStore {
  readonly clockResolutionMs = 1_000
  readonly inner = new MemoryLockStore()
  hanging = false
  /** Calls that hung, and whether each was aborted. */
  readonly hung: { aborted: boolean }[] = []
  /** Clock probes that hung (a holder's, sent while it holds its lease), apart from the calls. */
  readonly hungProbes: { aborted: boolean }[] = []

  read(key: string, options?: StoreCallOptions): Promise<ReadResult> {
    return this.#maybeHang(options, () => this.inner.read(key, options))
  }
  create(key: string, body: string, options?: StoreCallOptions): Promise<WriteResult> {
    return this.#maybeHang(options, () => this.inner.create(key, body, options))
  }
  replace(key: string, body: string, etag: string, options?: StoreCallOptions): Promise<WriteResult> {
    return this.#maybeHang(options, () => this.inner.replace(key, body, etag, options))
  }

  async probeDate(key: string, options?: StoreCallOptions): Promise<number | undefined> {
    return (await this.#maybeHang(options, () => this.inner.read(key, options), this.hungProbes)).serverDate
  }

  #maybeHang<T>(
    options: StoreCallOptions | undefined,
    answer: () => Promise<T>,
    hung = this.hung,
  ): Promise<T> {
    if (!this.hanging) return answer()
    const call = { aborted: false }
    hung.push(call)
    return new Promise<T>((_, reject) => {
      options?.signal?.addEventListener('abort', () => {
        call.aborted = true
        reject(options.signal?.reason)
      })
    })
  }
}

const lockOn = (store: LockStore, owner: string) =>
  new Lock({ store, key: KEY, owner, ttlMs: 60_000, retry: { attempts: 4, baseMs: 10, capMs: 50 } })

async function timed<T>(call: Promise<T>): Promise<{ error: unknown; ms: number }> {
  const began = Date.now()
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  )
  return { error, ms: Date.now() - began }
}

describe('acquire with a wait, bounded as a whole', () => {
  it('fails with a retryable LockStoreError at the end of the wait when the store never answers, aborting the hung call', async () => {
    const store = new HangingStore()
    store.hanging = true
    const { error, ms } = await timed(lockOn(store, 'a').acquire({ waitMs: 300 }))
    expect(error).toBeInstanceOf(LockStoreError)
    expect((error as LockStoreError).retryable).toBe(true)
    expect(ms).toBeGreaterThanOrEqual(300 - 20)
    expect(ms).toBeLessThan(300 + GRACE_MS)
    expect(store.hung).toEqual([{ aborted: true }])
  })

  it('names the holder it last saw when the wait runs out while it looks again', async () => {
    const store = new HangingStore()
    await leaseOf(lockOn(store, 'holder').tryAcquire())
    const waiting = timed(lockOn(store, 'b').acquire({ waitMs: 300, backoff: { baseMs: 50, capMs: 50 } }))
    await new Promise((resolve) => setTimeout(resolve, 100))
    store.hanging = true
    const { error, ms } = await waiting
    expect(error).toBeInstanceOf(LockTimeoutError)
    expect((error as LockTimeoutError).holder.owner).toBe('holder')
    expect(ms).toBeLessThan(300 + GRACE_MS)
    expect(store.hung.every((call) => call.aborted)).toBe(true)
  })

  it("rejects with the caller's own reason when the caller aborts during a hung call", async () => {
    const store = new HangingStore()
    store.hanging = true
    const controller = new AbortController()
    const reason = new Error('shutting down')
    setTimeout(() => controller.abort(reason), 100)
    const { error, ms } = await timed(
      lockOn(store, 'a').acquire({ waitMs: 10_000, signal: controller.signal }),
    )
    expect(error).toBe(reason)
    expect(ms).toBeLessThan(100 + GRACE_MS)
  })
})
