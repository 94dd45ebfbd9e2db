import { type BackoffOptions, backoffDelay } from './backoff.js'
import { type Clock, systemClock } from './clock.js'
import { ConflictReason, LockConflictError, LockCorruptedError, LockStoreError } from './errors.js'
import { parseRecord } from './parse-record.js'
import { type LockRecord, MAX_RECORD_BYTES } from './record.js'
import type { ServerTime } from './server-clock.js'
import { SessionTime } from './session-time.js'
import {
  type LockStore,
  type ReadResult,
  ReadStatus,
  type StoreCallOptions,
  type StoreLimits,
  type TakeRequest,
  TakeStatus,
  type WriteResult,
  WriteStatus,
} from './store.js'
import { tokenAfter } from './token.js'

/** A settle read that failed: whether the write landed is not known. */
const UNKNOWN = Symbol('unknown')

/** How transient store failures are retried. */
export interface RetryOptions extends BackoffOptions {
  /** Tries per store call, the first included. Never past the lease's own deadline. @default 4 */
  readonly attempts?: number
}

/**
 * What a conditional write came to. When it failed because someone else wrote, and the object
 * was read to settle an ambiguous answer, `current` is what that read found: no need to read again.
 */
export type WriteOutcome = WriteResult & { readonly current?: Snapshot }

/** A lock record as read, with what is needed to replace it. */
export interface Snapshot {
  readonly record: LockRecord
  readonly etag: string
  /** Lowest possible store time when this was read (ms), to judge expiry conservatively. */
  readonly serverLower: number
}

/** What a read found: the record, or none. */
export interface ReadOutcome {
  readonly snapshot: Snapshot | undefined
  /** Nothing was found, but the store could not be sure there is nothing (see `ReadResult`). */
  readonly unconfirmedAbsence: boolean
  /**
   * Local time the read was sent, when this is one's answer (not our own last write, nor a
   * record read ahead): the token of a write over what it found is chosen by the store's clock
   * then (see `Lock`).
   */
  readonly sentAt?: number
}

/** A free record read ahead of the first acquisition (`StoreSession.readAhead`), and when that read was sent. */
export interface ReadAhead {
  readonly snapshot: Snapshot
  readonly sentAt: number
}

/** A write of ours that landed: while nobody else writes, it is what a read would find. */
export interface OwnWrite {
  readonly record: LockRecord
  readonly etag: string
}

/**
 * What a take came to: the record it wrote (and the one it wrote over, unless the answer was
 * lost and a later try found our take), or what is there, as a read finds it.
 */
export type TakeOutcome =
  | {
      readonly taken: Snapshot
      readonly previous: LockRecord | undefined
      /** Local time the take that landed was sent (a retry's, when it found its own take). */
      readonly sentAt: number
    }
  | { readonly found: ReadOutcome }

/** What a session is made with: what a `Lock` or a `LockOperator` is given for it. */
export interface SessionOptions {
  readonly store: LockStore
  readonly clock?: Clock
  readonly retry?: RetryOptions
  readonly random?: () => number
  readonly trustLocalClock?: boolean
}

/** The session of a `Lock` or a `LockOperator` on `key`, with the defaults both take. */
export function openSession(options: SessionOptions, key: string, marginMs: number): StoreSession {
  return new StoreSession(
    options.store,
    key,
    marginMs,
    options.clock ?? systemClock,
    options.retry ?? {},
    options.random ?? Math.random,
    options.trustLocalClock ?? false,
  )
}

/**
 * One lock's calls to its store, and what they taught: the highest token seen, our own last
 * write (which saves the read on a warm re-acquire), and, through every answer's date, the
 * estimate of the store's clock (`time`, a `SessionTime`: what is judged by that clock lives
 * there). It does the I/O and keeps these to itself; the token rules are in `token.ts`.
 */
export class StoreSession {
  readonly #store: LockStore
  readonly #retry: RetryOptions
  /** The store's clock as this session knows it, and what is judged by it. */
  readonly time: SessionTime
  #lastWrite: OwnWrite | undefined
  /** The read made ahead of the first acquisition (`readAhead`), until an acquisition takes it. */
  #readAhead: Promise<ReadAhead | undefined> | undefined
  /** A vanished object is recreated above it, never below. */
  #highestToken = 0

  constructor(
    store: LockStore,
    readonly key: string,
    readonly marginMs: number,
    readonly clock: Clock,
    retry: RetryOptions,
    readonly random: () => number,
    trustLocalClock: boolean,
  ) {
    this.#store = store
    this.#retry = retry
    this.time = new SessionTime(store, key, marginMs, clock, trustLocalClock)
  }

  /** What the store can hold of a record, when it says. */
  get limits(): StoreLimits | undefined {
    return this.#store.limits
  }

  /** Our own last write, unless we found it written over since. */
  get lastWrite(): OwnWrite | undefined {
    return this.#lastWrite
  }

  /** The highest token seen here, in the object or in our own writes. */
  get highestToken(): number {
    return this.#highestToken
  }

  /** Records a write of ours that landed: the cache for a blind re-acquire, and the token floor. */
  remember(record: LockRecord, etag: string): void {
    this.#lastWrite = { record, etag }
    this.#readAhead = undefined
    this.#highestToken = Math.max(this.#highestToken, record.token)
  }

  /** Records a reset of ours that landed: its token is the floor from now on, even below those seen. */
  rememberReset(record: LockRecord, etag: string): void {
    this.#lastWrite = { record, etag }
    this.#readAhead = undefined
    this.#highestToken = record.token
  }

  /**
   * Reads the record ahead of the first acquisition (a Lambda's INIT), whose write may then go
   * over it blind, as over our own last write: its condition (If-Match) holds only while the
   * object is as read, however long ago that was. Kept only when it was free to take (released
   * or expired), which it then stays; a held record is read again by the acquisition. Never
   * rejects: the acquisition's own read reports what is wrong.
   */
  readAhead(deadline: number): Promise<void> {
    const ahead = this.read(deadline).then(
      ({ snapshot, sentAt }) =>
        snapshot && sentAt !== undefined && this.time.isFree(snapshot) ? { snapshot, sentAt } : undefined,
      () => undefined,
    )
    this.#readAhead = ahead
    return ahead.then(() => undefined)
  }

  /** The read made ahead (see `readAhead`), once: the first acquisition takes it, waiting if it is under way. */
  takeReadAhead(): Promise<ReadAhead | undefined> | undefined {
    const ahead = this.#readAhead
    this.#readAhead = undefined
    return ahead
  }

  /** The store takes a released lock in one request (`LockStore.take`), and no read ahead is kept or under way. */
  get takes(): boolean {
    return this.#store.take !== undefined && this.#readAhead === undefined
  }

  /**
   * Takes a released lock in one request (`LockStore.take`), retried on transient failures. A
   * take once sent is never abandoned (no signal), as `write`'s writes: a try after one whose
   * answer was lost reads, in its failed condition's answer, our own take (our owner, term and
   * time), and counts it as landed. Throws `LockCorruptedError` for a record no reader takes.
   */
  async take(request: TakeRequest, deadline: number): Promise<TakeOutcome> {
    const store = this.#store
    if (!store.take) throw new Error('take: the store cannot take')
    const take = store.take.bind(store)
    return this.#withRetries(deadline, undefined, async () => {
      const sentAt = this.clock.now()
      const answer = await take(this.key, request)
      const receivedAt = this.clock.now()
      this.time.observe(answer.serverDate, sentAt, receivedAt)
      if (answer.status === TakeStatus.Taken) return await this.#taken(answer, sentAt, receivedAt, deadline)
      const found = this.#outcomeOf(answer.current, sentAt, receivedAt)
      const { snapshot } = found
      if (snapshot && isOwnTake(snapshot.record, request))
        return { taken: snapshot, previous: undefined, sentAt }
      return { found }
    })
  }

  /**
   * A take that landed, read as records. One over a record no reader takes (a field of the
   * wrong type, which the store's conditions do not look at) is put back as it was before it is
   * refused, as a read first would have refused it without writing: else a lease nobody holds
   * would stay there for a whole ttl.
   */
  async #taken(
    answer: { readonly body: string; readonly etag: string; readonly previous: string },
    sentAt: number,
    receivedAt: number,
    deadline: number,
  ): Promise<TakeOutcome> {
    try {
      const previous = parseRecord(answer.previous, this.key, answer.etag)
      const found = { status: ReadStatus.Found, body: answer.body, etag: answer.etag } as const
      return { taken: this.#snapshotOf(found, receivedAt), previous, sentAt }
    } catch (error) {
      if (!(error instanceof LockCorruptedError)) throw error
      await this.write(answer.previous, answer.etag, deadline)
      throw error
    }
  }

  /** Our write `etag` was written over: a re-acquire must read first. */
  forget(etag: string): void {
    if (this.#lastWrite?.etag === etag) this.#lastWrite = undefined
  }

  /**
   * The token to write over an object showing `seen`: above it and every token seen here, from
   * the store's clock as it may read at local time `at` (now, or when the acquisition's read or
   * take was sent: see `Lock`). Throws `LockConflictError` (`tokens-exhausted`,
   * `record-ahead-of-clock`: see `tokenAfter`) before anything is written.
   */
  nextToken(seen = 0, at = this.clock.now()): number {
    return tokenAfter(Math.max(seen, this.#highestToken), this.time.serverTime(at), this.key)
  }

  /** Waits before the next try of a contended call, never past local time `until`. */
  waitBeforeRetry(attempt: number, signal?: AbortSignal, until = Number.POSITIVE_INFINITY): Promise<void> {
    const delay = backoffDelay(attempt, this.#retry, this.random)
    return this.clock.sleep(Math.max(0, Math.min(delay, until - this.clock.now())), signal)
  }

  /** Reads and parses the record, retried on transient failures. Throws `LockCorruptedError`. */
  async read(deadline: number, signal?: AbortSignal): Promise<ReadOutcome> {
    return this.#withRetries(deadline, signal, async () => {
      const sentAt = this.clock.now()
      const result = await this.#store.read(this.key, { ...(signal && { signal }) })
      const receivedAt = this.clock.now()
      this.time.observe(result.serverDate, sentAt, receivedAt)
      return this.#outcomeOf(result, sentAt, receivedAt)
    })
  }

  /** What a read (or a take's failed condition, which answers as one) found, parsed. */
  #outcomeOf(result: ReadResult, sentAt: number, receivedAt: number): ReadOutcome {
    if (result.status === ReadStatus.Absent) {
      return { snapshot: undefined, unconfirmedAbsence: result.unconfirmed === true, sentAt }
    }
    return { snapshot: this.#snapshotOf(result, receivedAt), unconfirmedAbsence: false, sentAt }
  }

  /**
   * One read, neither retried nor parsed: an operator's reset judges whatever is there, a body
   * that is not a valid record included. `server` is the store's time when it answered.
   */
  async peek(): Promise<{ readonly current: ReadResult; readonly server: ServerTime }> {
    const sentAt = this.clock.now()
    const current = await this.#store.read(this.key)
    const receivedAt = this.clock.now()
    this.time.observe(current.serverDate, sentAt, receivedAt)
    return { current, server: this.time.serverTime(receivedAt) }
  }

  /** One conditional write (create when `etag` is null), neither retried nor settled: an operator's. */
  writeOnce(body: string, etag: string | null): Promise<WriteResult> {
    return etag === null ? this.#store.create(this.key, body) : this.#store.replace(this.key, body, etag)
  }

  /** The record a read found, parsed (throws `LockCorruptedError`), raising the token floor. */
  #snapshotOf(found: Extract<ReadResult, { status: typeof ReadStatus.Found }>, receivedAt: number): Snapshot {
    const record = parseRecord(found.body, this.key, found.etag)
    this.#highestToken = Math.max(this.#highestToken, record.token)
    return { record, etag: found.etag, serverLower: this.time.serverTime(receivedAt).lower }
  }

  /**
   * A conditional write (create when `etag` is null), retried on transient failures.
   *
   * A failed write is ambiguous: it may have landed before its answer was lost, and under a
   * race some engines (Ceph) answer the losers of simultaneous If-Match writes with a 500. So
   * after a failure we read before writing again: our own body means the write is ours;
   * another etag means someone else won; only an unchanged object is worth another try.
   *
   * `signal` stops the tries only between them, once a read has shown the object unchanged: a
   * write already sent is never abandoned, nor the read that settles it, nor the tries after a
   * read that could not tell (the tries and the `deadline` still bound them). Its answer decides
   * (each request is bounded by the store's own timeout); abandoned, a write that landed would
   * leave a live lease its writer never learns of, holding the lock for a whole ttl.
   */
  async write(
    body: string,
    etag: string | null,
    deadline: number,
    signal?: AbortSignal,
  ): Promise<WriteOutcome> {
    const size = Buffer.byteLength(body, 'utf8')
    if (size > MAX_RECORD_BYTES) {
      // Writing it would wedge the lock: every reader refuses a record this large.
      throw new LockConflictError(
        `Lock "${this.key}": the record would be ${size} bytes, over ${MAX_RECORD_BYTES}; nothing was written`,
        { key: this.key, reason: ConflictReason.RecordTooLarge },
      )
    }
    const options = {}
    // A write that may have landed, not yet told by a read: stopping now could abandon a live lease.
    let untold = false
    for (let attempt = 0; ; attempt++) {
      if (!untold) signal?.throwIfAborted()
      const sentAt = this.clock.now()
      let failure: LockStoreError
      try {
        const answer =
          etag === null
            ? await this.#store.create(this.key, body, options)
            : await this.#store.replace(this.key, body, etag, options)
        this.time.observe(answer.serverDate, sentAt, this.clock.now())
        if (answer.status !== WriteStatus.PreconditionFailed || (attempt === 0 && !answer.ambiguous)) {
          return answer
        }
        // A retry that fails its condition may have failed against our own first try.
        const settled = await this.#settle(body, etag, options)
        if (settled === UNKNOWN) {
          throw new LockStoreError(`Lock "${this.key}": could not tell whether a retried write landed`, {
            key: this.key,
            retryable: true,
          })
        }
        return settled ?? answer
      } catch (error) {
        if (!(error instanceof LockStoreError) || !error.retryable) throw error
        failure = error
      }
      const settled = await this.#settle(body, etag, options)
      if (settled && settled !== UNKNOWN) return settled
      untold = settled === UNKNOWN
      await this.#backOff(attempt, failure, deadline, untold ? undefined : signal)
    }
  }

  /**
   * After an ambiguous write: what the object says happened; undefined when it is unchanged, so
   * that writing again is both safe (conditional) and needed; UNKNOWN when it cannot be read.
   */
  async #settle(
    body: string,
    etag: string | null,
    options: StoreCallOptions,
  ): Promise<WriteOutcome | typeof UNKNOWN | undefined> {
    const sentAt = this.clock.now()
    const current = await this.#store.read(this.key, options).catch(() => undefined)
    if (!current) return UNKNOWN
    const receivedAt = this.clock.now()
    this.time.observe(current.serverDate, sentAt, receivedAt)
    if (current.status === ReadStatus.Found) {
      if (current.body === body) return { status: WriteStatus.Written, etag: current.etag }
      if (etag === null || current.etag !== etag) {
        // Someone else won: what they wrote is what the caller would read next.
        let seen: Snapshot | undefined
        try {
          seen = this.#snapshotOf(current, receivedAt)
        } catch {
          // Not a valid record: the caller's own read will say so.
        }
        return { status: WriteStatus.PreconditionFailed, ...(seen && { current: seen }) }
      }
      return undefined
    }
    if (current.unconfirmed) return undefined
    return etag === null ? undefined : { status: WriteStatus.Absent }
  }

  async #withRetries<T>(
    deadline: number,
    signal: AbortSignal | undefined,
    call: () => Promise<T>,
  ): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      signal?.throwIfAborted()
      try {
        return await call()
      } catch (error) {
        if (!(error instanceof LockStoreError) || !error.retryable) throw error
        await this.#backOff(attempt, error, deadline, signal)
      }
    }
  }

  /** Sleeps before try `attempt + 1`, or gives up when out of tries or of time. */
  async #backOff(
    attempt: number,
    failure: LockStoreError,
    deadline: number,
    signal?: AbortSignal,
  ): Promise<void> {
    const delay = backoffDelay(attempt, this.#retry, this.random)
    if (attempt + 1 >= (this.#retry.attempts ?? 4) || this.clock.now() + delay >= deadline) {
      throw new LockStoreError(
        `Lock "${this.key}": the store kept failing (${attempt + 1} tries): ${failure.message}`,
        {
          key: this.key,
          retryable: true,
          cause: failure,
        },
      )
    }
    await this.clock.sleep(delay, signal)
  }
}

/** Whether `record` is the take `request` wrote: its lease, to the millisecond of its time. */
function isOwnTake(record: LockRecord, request: TakeRequest): boolean {
  return (
    record.owner === request.owner &&
    record.expires_at === request.expires_at &&
    record.acquired_at === request.acquired_at &&
    record.ttl_ms === request.ttl_ms
  )
}

/** A store that failed a condition its object meets: nothing was written, and no retry can help. */
export function contradicted(key: string, etag: string): LockStoreError {
  return new LockStoreError(
    `Lock "${key}": the store answered precondition-failed to a write conditional on version ` +
      `${etag}, yet a read shows the object at that very version: this engine does not evaluate ` +
      'conditional writes as the store contract requires; nothing was written',
    { key, retryable: false },
  )
}
