import { type BackoffOptions, backoffDelay } from './backoff.js'
import { type Clock, ServerClock } from './clock.js'
import { LockStoreError } from './errors.js'
import { type LockRecord, parseRecord } from './record.js'
import { type LockStore, ReadStatus, type WriteResult, WriteStatus } from './store.js'

/** How transient store failures are retried. */
export interface RetryOptions extends BackoffOptions {
  /** Tries per store call, the first included. Never past the lease's own deadline. @default 4 */
  readonly attempts?: number
}

/** A lock record as read, with what is needed to replace it. */
export interface Snapshot {
  readonly record: LockRecord
  readonly etag: string
  /** Lowest possible store time when this was read (ms), to judge expiry conservatively. */
  readonly serverLower: number
}

export interface TimedWrite {
  readonly result: WriteResult
  /** Local time when the (last) attempt was sent: a lease counts from here. */
  readonly sentAt: number
}

/**
 * Everything a lock and its leases share: the store, the clock estimate, the retry policy and
 * the cache of our own last write (which saves the read on a warm re-acquire).
 */
export class LockContext {
  readonly serverClock: ServerClock
  /** Our own last successful write: if nobody wrote since, a re-acquire needs no read. */
  lastWrite: { readonly record: LockRecord; readonly etag: string } | undefined
  /** Highest token ever seen here: a vanished object is recreated above it, never below. */
  highestToken = 0
  /** The last read found no object but could not be sure of it (see `ReadResult`). */
  lastAbsenceUnconfirmed = false

  constructor(
    readonly store: LockStore,
    readonly key: string,
    readonly marginMs: number,
    readonly clock: Clock,
    readonly retry: RetryOptions,
    readonly random: () => number,
  ) {
    this.serverClock = new ServerClock(clock, store.clockResolutionMs)
  }

  /** Free to take: released, or expired by the store's clock even if our clock ran late by the margin. */
  isFree(snapshot: Snapshot): boolean {
    const { expires_at } = snapshot.record
    return expires_at === 0 || snapshot.serverLower > expires_at * 1000 + this.marginMs
  }

  /** `expires_at` for a lease of `ttlMs` counted from now: never earlier than the truth. */
  expiresAtFor(ttlMs: number): number {
    return Math.ceil(this.serverClock.upperNow() + ttlMs) / 1000
  }

  /** Waits before the next try of a contended call. */
  pause(attempt: number, signal?: AbortSignal): Promise<void> {
    return this.clock.sleep(backoffDelay(attempt, this.retry, this.random), signal)
  }

  /** Reads and parses the record; `undefined` when there is none. Throws `LockCorruptedError`. */
  async read(deadline: number, signal?: AbortSignal): Promise<Snapshot | undefined> {
    return this.#withRetries(deadline, signal, async () => {
      const sentAt = this.clock.now()
      const result = await this.store.read(this.key, { ...(signal && { signal }) })
      const receivedAt = this.clock.now()
      this.serverClock.observe(result.serverDate, sentAt, receivedAt)
      this.lastAbsenceUnconfirmed = result.status === ReadStatus.Absent && result.unconfirmed === true
      if (result.status === ReadStatus.Absent) return undefined
      const record = parseRecord(result.body, this.key, result.etag)
      this.highestToken = Math.max(this.highestToken, record.token)
      const serverLower = result.serverDate ?? this.serverClock.lowerNow()
      return { record, etag: result.etag, serverLower }
    })
  }

  /**
   * A conditional write (create when `etag` is null), retried on transient failures.
   *
   * A retried write is ambiguous: the first try may have landed before its answer was lost, and
   * then the retry fails its precondition against our own write. In that case we read back, and
   * if the object is byte for byte what we wrote, the write is ours.
   */
  async write(
    body: string,
    etag: string | null,
    deadline: number,
    signal?: AbortSignal,
  ): Promise<TimedWrite> {
    let ambiguous = false
    let sentAt = this.clock.now()
    const result = await this.#withRetries(
      deadline,
      signal,
      async () => {
        sentAt = this.clock.now()
        const options = { ...(signal && { signal }) }
        const answer =
          etag === null
            ? await this.store.create(this.key, body, options)
            : await this.store.replace(this.key, body, etag, options)
        this.serverClock.observe(answer.serverDate, sentAt, this.clock.now())
        return answer
      },
      () => {
        ambiguous = true
      },
    )
    if (result.status === WriteStatus.PreconditionFailed && (ambiguous || result.ambiguous)) {
      const current = await this.store.read(this.key, { ...(signal && { signal }) }).catch(() => undefined)
      if (current?.status === ReadStatus.Found && current.body === body) {
        return { result: { status: WriteStatus.Written, etag: current.etag }, sentAt }
      }
    }
    return { result, sentAt }
  }

  async #withRetries<T>(
    deadline: number,
    signal: AbortSignal | undefined,
    call: () => Promise<T>,
    onRetry?: () => void,
  ): Promise<T> {
    const attempts = this.retry.attempts ?? 4
    for (let attempt = 0; ; attempt++) {
      signal?.throwIfAborted()
      try {
        return await call()
      } catch (error) {
        if (!(error instanceof LockStoreError) || !error.retryable) throw error
        const delay = backoffDelay(attempt, this.retry, this.random)
        if (attempt + 1 >= attempts || this.clock.now() + delay >= deadline) {
          throw new LockStoreError(
            `Lock "${this.key}": the store kept failing (${attempt + 1} tries): ${error.message}`,
            { key: this.key, retryable: true, cause: error },
          )
        }
        onRetry?.()
        await this.clock.sleep(delay, signal)
      }
    }
  }
}
