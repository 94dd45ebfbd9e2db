import { type Clock, systemClock } from '../core/clock.js'
import {
  type ListKeysOptions,
  type LockKeyListing,
  type LockStore,
  type ReadResult,
  ReadStatus,
  type StoreCallOptions,
  type WriteResult,
  WriteStatus,
} from '../core/store.js'

export interface MemoryLockStoreOptions {
  /** The store's clock. @default the system clock */
  readonly clock?: Clock
  /**
   * Resolution of reported server dates, in ms. 1000 plays S3 or DynamoDB, whose `Date` counts
   * whole seconds, for tests of how a lock copes with that; the default, 1, keeps the wait before
   * each new token (see docs/how-it-works.md, the fencing guarantee) to a millisecond in your own tests. @default 1
   */
  readonly clockResolutionMs?: number
  /**
   * Whether answers carry the store's date. Without it a lock refuses to judge leases
   * (`LockClockError`) unless it was told to trust its local clock. @default true
   */
  readonly reportServerDate?: boolean
}

/**
 * A lock store in memory, atomic per call like S3's conditional writes. For deterministic
 * protocol tests (with a simulated clock) and for users' own unit tests.
 */
export class MemoryLockStore implements LockStore, LockKeyListing {
  readonly clockResolutionMs: number
  readonly #clock: Clock
  readonly #reportServerDate: boolean
  readonly #objects = new Map<string, { body: string; etag: string }>()
  #version = 0
  /** Requests served, by kind. */
  readonly requests = { read: 0, create: 0, replace: 0, probe: 0 }

  constructor(options: MemoryLockStoreOptions = {}) {
    this.#clock = options.clock ?? systemClock
    this.clockResolutionMs = options.clockResolutionMs ?? 1
    this.#reportServerDate = options.reportServerDate ?? true
  }

  /** Every key that starts with `prefix`, sorted (`LockKeyListing`). */
  async listKeys(prefix: string, options: ListKeysOptions = {}): Promise<string[]> {
    options.signal?.throwIfAborted()
    return [...this.#objects.keys()].filter((key) => key.startsWith(prefix)).sort()
  }

  async read(key: string, options: StoreCallOptions = {}): Promise<ReadResult> {
    options.signal?.throwIfAborted()
    this.requests.read++
    const object = this.#objects.get(key)
    const date = this.#date()
    return object ? { status: ReadStatus.Found, ...object, ...date } : { status: ReadStatus.Absent, ...date }
  }

  async create(key: string, body: string, options: StoreCallOptions = {}): Promise<WriteResult> {
    options.signal?.throwIfAborted()
    this.requests.create++
    if (this.#objects.has(key)) return { status: WriteStatus.PreconditionFailed, ...this.#date() }
    return this.#put(key, body)
  }

  async replace(
    key: string,
    body: string,
    etag: string,
    options: StoreCallOptions = {},
  ): Promise<WriteResult> {
    options.signal?.throwIfAborted()
    this.requests.replace++
    const object = this.#objects.get(key)
    if (!object) return { status: WriteStatus.Absent, ...this.#date() }
    if (object.etag !== etag) return { status: WriteStatus.PreconditionFailed, ...this.#date() }
    return this.#put(key, body)
  }

  /** The store's date, as a lock's clock probe asks it (counted apart from reads). */
  async probeDate(_key: string, options: StoreCallOptions = {}): Promise<number | undefined> {
    options.signal?.throwIfAborted()
    this.requests.probe++
    return this.#date().serverDate
  }

  /** Puts a body unconditionally, as an operator or a foreign writer would. */
  putRaw(key: string, body: string): string {
    return this.#put(key, body).etag
  }

  /** The stored body, or undefined. */
  peek(key: string): string | undefined {
    return this.#objects.get(key)?.body
  }

  delete(key: string): void {
    this.#objects.delete(key)
  }

  #put(key: string, body: string): { status: typeof WriteStatus.Written; etag: string; serverDate?: number } {
    const etag = `m${++this.#version}`
    this.#objects.set(key, { body, etag })
    return { status: WriteStatus.Written, etag, ...this.#date() }
  }

  /** The date this store would put on an answer now (none when it reports none). */
  dateNow(): { serverDate?: number } {
    return this.#date()
  }

  #date(): { serverDate?: number } {
    const serverDate = this.#serverDate()
    return serverDate === undefined ? {} : { serverDate }
  }

  #serverDate(): number | undefined {
    if (!this.#reportServerDate) return undefined
    const now = this.#clock.now()
    return now - (now % this.clockResolutionMs || 0)
  }
}
