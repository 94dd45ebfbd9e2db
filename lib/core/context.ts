import { type BackoffOptions, backoffDelay } from './backoff.js'
import type { Clock } from './clock.js'
import { BACKGROUND_PROBES_PER_TICK, nextProbeAt, type ProbePlan, probeSent } from './clock-probe.js'
import { ConflictReason, LockClockError, LockConflictError, LockStoreError } from './errors.js'
import { type LockRecord, MAX_RECORD_BYTES, parseRecord } from './record.js'
import { type ServerClock, type ServerTime, serverClockOf } from './server-clock.js'
import {
  type LockStore,
  type ReadResult,
  ReadStatus,
  type StoreCallOptions,
  type WriteResult,
  WriteStatus,
} from './store.js'
import { tokenWaitMs } from './token.js'

/** A probe sent while a lease is held waits this long for its answer at most: a later one says little. */
const BACKGROUND_PROBE_TIMEOUT_MS = 1_000

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

/** A lease of some length, counted from now. */
export interface LeaseTiming {
  /** What the record says: seconds since the epoch by the store's clock. */
  readonly expires_at: number
  /** When the holder must consider it over, by the local clock (epoch ms). */
  readonly deadline: number
  /** The store's time now, as best we know it (epoch ms). */
  readonly serverNow: number
  /** The lease's length, as recorded (`ttl_ms`) and renewed by default. */
  readonly ttlMs: number
}

/**
 * Everything a lock and its leases share: the store, the clock estimate, the retry policy and
 * the cache of our own last write (which saves the read on a warm re-acquire).
 */
export class LockContext {
  /** What this process knows of the store's clock, shared with its other locks on the store. */
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
    readonly trustLocalClock = false,
  ) {
    this.serverClock = serverClockOf(store, clock)
  }

  /**
   * The store's time at local time `localTime` (default now). Before any answer was dated there
   * is nothing to judge leases by: `LockClockError`, unless told to trust the local clock.
   */
  serverTime(localTime: number = this.clock.now()): ServerTime {
    const time = this.serverClock.at(localTime)
    if (time) return time
    if (!this.trustLocalClock) {
      throw new LockClockError(
        `Lock "${this.key}": the store's answers carry no date, so there is no clock to judge leases by. ` +
          'Let the Date header through (a proxy may strip it), or pass trustLocalClock: true if every ' +
          "contender's clock is synchronised to within the clock-skew margin",
        { key: this.key },
      )
    }
    return { lower: localTime, upper: localTime, mid: localTime, halfWidth: 0 }
  }

  /** Records a write of ours that landed: the cache for a blind re-acquire, and the token floor. */
  remember(record: LockRecord, etag: string): void {
    this.lastWrite = { record, etag }
    this.highestToken = Math.max(this.highestToken, record.token)
  }

  /** Free to take: released, or expired by the store's clock even if our clock ran late by the margin. */
  isFree(snapshot: Snapshot): boolean {
    const { expires_at } = snapshot.record
    return expires_at === 0 || snapshot.serverLower > expires_at * 1000 + this.marginMs
  }

  /**
   * A lease of `ttlMs` from now. The record's `expires_at` is stamped from our best guess of the
   * store's clock (the middle of what we know of it), so that the lock frees neither late nor
   * early on average; the holder gives up its lease the margin, plus however far that guess may
   * be off, before then. So by the store's clock a holder is done by `expires_at - margin`,
   * whatever our guess, and contenders wait until `expires_at + margin`.
   */
  leaseFor(ttlMs: number): LeaseTiming {
    const now = this.clock.now()
    const server = this.serverTime(now)
    return {
      expires_at: Math.ceil(server.mid + ttlMs) / 1000,
      deadline: Math.floor(now + ttlMs - this.marginMs - server.halfWidth),
      serverNow: server.mid,
      ttlMs,
    }
  }

  /**
   * A new lease of `ttlMs` that starts when the store's clock reaches its `token`: it is handed
   * out only then (`awaitToken`), so the wait for the token does not spend it. Its `deadline` is
   * what the estimate says now; `deadlineOf` says it again once the wait is over.
   */
  leaseFromToken(token: number, ttlMs: number): LeaseTiming {
    const now = this.clock.now()
    const expires_at = (token + ttlMs) / 1000
    return {
      expires_at,
      deadline: this.deadlineOf(expires_at, now),
      serverNow: this.serverTime(now).mid,
      ttlMs,
    }
  }

  /**
   * When a holder must consider a lease that expires at `expires_at` over, by the local clock:
   * once the store's clock may have reached `expires_at - margin`, however far our guess is off.
   */
  deadlineOf(expires_at: number, now: number = this.clock.now()): number {
    return Math.floor(now + expires_at * 1000 - this.marginMs - this.serverTime(now).upper)
  }

  /**
   * A lease held until local time `until`, by a holder that is stopped by then anyway. Its
   * `expires_at` is the latest the store's clock can read at `until`, so no contender takes it
   * over before then, whatever our guess; the holder's own lease ends at `until`, no earlier.
   */
  leaseUntil(until: number): LeaseTiming {
    const now = this.clock.now()
    const server = this.serverTime(now)
    const ttlMs = Math.ceil(until - now + server.halfWidth)
    return { expires_at: Math.ceil(server.mid + ttlMs) / 1000, deadline: until, serverNow: server.mid, ttlMs }
  }

  /**
   * Waits until the store's clock has surely passed `token`, so that every later acquisition
   * takes a higher one (see `tokenAfter`). While it waits, it asks the store the time at the
   * moments that narrow the estimate most (`nextProbeAt`): the wait ends as soon as the estimate
   * shows the store's clock past the token, and the next acquisitions of this process wait only
   * as long as the narrowed estimate is wide. Not abortable: the token is written already, and a
   * holder that gave up here would leave the lock held until it expires.
   */
  async awaitToken(token: number): Promise<void> {
    for (;;) {
      const now = this.clock.now()
      const wait = tokenWaitMs(token, this.serverTime(now))
      if (wait <= 0) return
      const probe = nextProbeAt(this.serverClock, now, now + wait)
      if (probe === undefined) await this.clock.sleep(wait)
      else if (probe.at > now) await this.clock.sleep(probe.at - now)
      else await this.#probe(probe, now + wait)
    }
  }

  /**
   * Keeps the estimate narrow while a lease is held (until local time `until`, or until the
   * returned function is called): when a turn of the store's second falls within the lease and
   * the estimate has loosened since it was narrowed, a few probes find the turn again. The work
   * runs anyway, so they cost requests, not time; a job at a cron's fixed phase that lasts a
   * second or more keeps its estimate as narrow as its first run made it.
   */
  narrowWhileHeld(until: number): () => void {
    let stopped = false
    let cancel = (): void => {}
    const plan = (): void => {
      const now = this.clock.now()
      const probe = stopped
        ? undefined
        : nextProbeAt(this.serverClock, now, until, BACKGROUND_PROBES_PER_TICK)
      if (probe === undefined) return
      cancel = this.clock.schedule(probe.at - now, () => {
        const giveUpAt = Math.min(until, this.clock.now() + BACKGROUND_PROBE_TIMEOUT_MS)
        if (!stopped) void this.#probe(probe, giveUpAt).then(plan)
      })
    }
    plan()
    return () => {
      stopped = true
      cancel()
    }
  }

  /**
   * Asks the store the time, as `probe` planned, to narrow the estimate; given up at local time
   * `until` (when the wait it serves would be over anyway). Never fails: the wait ends by the
   * clock without it.
   */
  async #probe(probe: ProbePlan, until: number): Promise<void> {
    const sentAt = this.clock.now()
    probeSent(this.serverClock, probe, sentAt)
    const giveUp = new AbortController()
    const cancel = this.clock.schedule(until - sentAt, () => giveUp.abort())
    try {
      const options = { signal: giveUp.signal }
      const serverDate = this.store.probeDate
        ? await this.store.probeDate(this.key, options)
        : (await this.store.read(this.key, options)).serverDate
      this.serverClock.observe(serverDate, sentAt, this.clock.now())
    } catch {
      // A probe only sharpens the estimate.
    } finally {
      cancel()
    }
  }

  /** Waits before the next try of a contended call, never past local time `until`. */
  pause(attempt: number, signal?: AbortSignal, until = Number.POSITIVE_INFINITY): Promise<void> {
    const delay = backoffDelay(attempt, this.retry, this.random)
    return this.clock.sleep(Math.max(0, Math.min(delay, until - this.clock.now())), signal)
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
      return this.#snapshotOf(result, receivedAt)
    })
  }

  /** The record a read found, parsed (throws `LockCorruptedError`), raising the token floor. */
  #snapshotOf(found: Extract<ReadResult, { status: typeof ReadStatus.Found }>, receivedAt: number): Snapshot {
    const record = parseRecord(found.body, this.key, found.etag)
    this.highestToken = Math.max(this.highestToken, record.token)
    return { record, etag: found.etag, serverLower: this.serverTime(receivedAt).lower }
  }

  /**
   * A conditional write (create when `etag` is null), retried on transient failures.
   *
   * A failed write is ambiguous: it may have landed before its answer was lost, and under a
   * race some engines (Ceph) answer the losers of simultaneous If-Match writes with a 500. So
   * after a failure we read before writing again: our own body means the write is ours;
   * another etag means someone else won; only an unchanged object is worth another try.
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
    const options = { ...(signal && { signal }) }
    for (let attempt = 0; ; attempt++) {
      signal?.throwIfAborted()
      const sentAt = this.clock.now()
      let failure: LockStoreError
      try {
        const answer =
          etag === null
            ? await this.store.create(this.key, body, options)
            : await this.store.replace(this.key, body, etag, options)
        this.serverClock.observe(answer.serverDate, sentAt, this.clock.now())
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
      await this.#backOff(attempt, failure, deadline, signal)
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
    const current = await this.store.read(this.key, options).catch(() => undefined)
    if (!current) return UNKNOWN
    const receivedAt = this.clock.now()
    this.serverClock.observe(current.serverDate, sentAt, receivedAt)
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
    const delay = backoffDelay(attempt, this.retry, this.random)
    if (attempt + 1 >= (this.retry.attempts ?? 4) || this.clock.now() + delay >= deadline) {
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
