import { type Clock, systemClock } from '../core/clock.js'
import {
  type ListKeysOptions,
  type LockKeyListing,
  type LockStore,
  type ReadResult,
  ReadStatus,
  type StoreCallOptions,
  type TakeRequest,
  type TakeResult,
  TakeStatus,
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
  /**
   * Whether the store takes a released lock in one write (`LockStore.take`), as DynamoDB's store
   * does with an UpdateItem. Without it the store has no `take`, and a lock reads before it
   * writes, as it does on S3. @default false
   */
  readonly takes?: boolean
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
  readonly requests = { read: 0, create: 0, replace: 0, probe: 0, take: 0 }
  /**
   * Takes a released lock in one write (`LockStore.take`), when the store was made with `takes`:
   * over a record of version 1, released, not paused, whose token is a number below `tokenBelow`
   * and whose run, if any, a number below `Number.MAX_SAFE_INTEGER`. Other fields keep their
   * place, new ones come last, `running` goes.
   */
  readonly take?: (key: string, take: TakeRequest, options?: StoreCallOptions) => Promise<TakeResult>

  constructor(options: MemoryLockStoreOptions = {}) {
    this.#clock = options.clock ?? systemClock
    this.clockResolutionMs = options.clockResolutionMs ?? 1
    this.#reportServerDate = options.reportServerDate ?? true
    if (options.takes) this.take = (key, take, callOptions) => this.#take(key, take, callOptions)
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

  async #take(key: string, take: TakeRequest, options: StoreCallOptions = {}): Promise<TakeResult> {
    options.signal?.throwIfAborted()
    this.requests.take++
    const object = this.#objects.get(key)
    const body = object && takenBody(object.body, take)
    if (object === undefined || body === undefined) {
      const date = this.#date()
      const current: ReadResult = object
        ? { status: ReadStatus.Found, ...object, ...date }
        : { status: ReadStatus.Absent, ...date }
      return { status: TakeStatus.NotTaken, current, ...date }
    }
    const { etag, serverDate } = this.#put(key, body)
    return {
      status: TakeStatus.Taken,
      body,
      etag,
      previous: object.body,
      ...(serverDate === undefined ? {} : { serverDate }),
    }
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

/** What a take writes over `body`, or undefined where it writes nothing (see `MemoryLockStore.take`). */
function takenBody(body: string, take: TakeRequest): string | undefined {
  let record: unknown
  try {
    record = JSON.parse(body)
  } catch {
    return undefined
  }
  if (typeof record !== 'object' || record === null || Array.isArray(record)) return undefined
  const { running: _running, ...kept } = record as Record<string, unknown>
  const { v, expires_at, token, run } = kept
  if (v !== 1 || expires_at !== 0 || Object.hasOwn(kept, 'paused')) return undefined
  if (typeof token !== 'number' || !(token < take.tokenBelow)) return undefined
  if (Object.hasOwn(kept, 'run') && !(typeof run === 'number' && run < Number.MAX_SAFE_INTEGER))
    return undefined
  return JSON.stringify({
    ...kept,
    owner: take.owner,
    expires_at: take.expires_at,
    acquired_at: take.acquired_at,
    ttl_ms: take.ttl_ms,
    token: token + 1,
    run: ((run as number | undefined) ?? 0) + 1,
  })
}
