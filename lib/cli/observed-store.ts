import { performance } from 'node:perf_hooks'
import { LockStoreError } from '../core/errors.js'
import {
  canListKeys,
  type ListKeysOptions,
  type LockKeyListing,
  type LockStore,
  type ReadResult,
  ReadStatus,
  type StoreCallOptions,
  type StoreLimits,
  type WriteResult,
} from '../core/store.js'

/**
 * A store that passes every call through and notes what the operator needs beside the lock's
 * own answers: the store's clock (to say when a lease ends, by the clock that decides it) and
 * which keys read as absent without proof (S3 hides a missing key behind 403 from a reader
 * without s3:ListBucket; refused credentials are not read as absent, they fail the read).
 */
export class ObservedStore implements LockStore, LockKeyListing {
  readonly clockResolutionMs: number
  readonly limits?: StoreLimits
  readonly #inner: LockStore
  #last: { serverDate: number; receivedAt: number } | undefined
  readonly #unconfirmed = new Set<string>()

  constructor(inner: LockStore) {
    this.#inner = inner
    this.clockResolutionMs = inner.clockResolutionMs
    if (inner.limits) this.limits = inner.limits
  }

  async read(key: string, options?: StoreCallOptions): Promise<ReadResult> {
    const result = this.#observe(await this.#inner.read(key, options))
    if (result.status === ReadStatus.Absent && result.unconfirmed) this.#unconfirmed.add(key)
    else this.#unconfirmed.delete(key)
    return result
  }

  async create(key: string, body: string, options?: StoreCallOptions): Promise<WriteResult> {
    return this.#observe(await this.#inner.create(key, body, options))
  }

  async replace(key: string, body: string, etag: string, options?: StoreCallOptions): Promise<WriteResult> {
    return this.#observe(await this.#inner.replace(key, body, etag, options))
  }

  /** The inner store's keys under `prefix`; a `LockStoreError` for a store that cannot list them. */
  listKeys(prefix: string, options?: ListKeysOptions): Promise<string[]> {
    const inner = this.#inner
    if (!canListKeys(inner)) {
      return Promise.reject(new LockStoreError('this store cannot list its keys', { retryable: false }))
    }
    return inner.listKeys(prefix, options)
  }

  /** Whether the last read of `key` answered "absent" without being able to tell. */
  absenceUnconfirmed(key: string): boolean {
    return this.#unconfirmed.has(key)
  }

  /**
   * The store's clock now (ms since the epoch), from the `Date` of its latest answer plus the
   * time since on this machine's monotonic clock: good to a second, for display only. Undefined
   * before any answer carried a date.
   */
  serverNow(): number | undefined {
    if (!this.#last) return undefined
    const { serverDate, receivedAt } = this.#last
    // `Date` is truncated to its resolution: the middle of the interval is the best guess.
    return serverDate + this.clockResolutionMs / 2 + (performance.now() - receivedAt)
  }

  #observe<R extends { serverDate?: number }>(result: R): R {
    if (result.serverDate !== undefined)
      this.#last = { serverDate: result.serverDate, receivedAt: performance.now() }
    return result
  }
}
