import { backoffDelay } from './backoff.js'
import type { Clock } from './clock.js'
import { WaitDeadline } from './deadline.js'
import { LockOptionsError, LockStoreError, LockTimeoutError } from './errors.js'
import { acquisitionRecord, runningFields, withoutRunning } from './holder-record.js'
import { Lease, type LeaseRaise } from './lease.js'
import {
  type AcquireOptions,
  AcquireStatus,
  type Acquisition,
  defaultOwner,
  type LeaseOptions,
  type LockOptions,
  type RunRecorder,
  type TryAcquireOptions,
  validateLockOptions,
  validateOwner,
  validateTick,
} from './lock-options.js'
import { type LockRecord, serializeRecord } from './record.js'
import { type ExclusiveRoutine, type RunExclusiveOptions, type RunResult, runExclusive } from './run.js'
import { type LockStore, type TakeRequest, WriteStatus } from './store.js'
import {
  contradicted,
  type OwnWrite,
  openSession,
  type ReadOutcome,
  type Snapshot,
  type StoreSession,
  type WriteOutcome,
} from './store-session.js'
import { DEFAULT_CLOCK_SKEW_MARGIN_MS, DEFAULT_TTL_MS, type LeaseTerm, validateTiming } from './timing.js'
import { AHEAD_OF_CLOCK_MS } from './token.js'

/** Read-and-write rounds one attempt may spend on 409s and stale caches. */
const MAX_ROUNDS = 8
/** Budget for store retries of calls that are not tied to a lease. */
const READ_BUDGET_MS = 10_000
/**
 * A record read ahead (a Lambda's INIT) at most this long before the acquisition that writes over
 * it chooses the token by the store's clock as that read was sent, as a read of the acquisition's
 * own does: on demand, INIT and the first invocation come within it. A read older than this (an
 * environment initialised ahead, as provisioned concurrency does, hours before) chooses it as
 * the write is sent, so that W2's window, which starts at the read, does not grow with its age.
 */
export const READ_AHEAD_FRESH_MS = 2_000

/** One acquisition attempt's ask, this lock's defaults applied. */
interface Attempt {
  readonly owner: string
  readonly ttlMs: number
  readonly holdUntil: number | undefined
  readonly tick: string | undefined
  readonly watchMs: number | undefined
  readonly signal: AbortSignal | undefined
  /** Local time until which its store calls may retry: the lease's end, or the wait's. */
  readonly budget: number
}

/**
 * A named lock on a `LockStore`: the lease protocol of docs/how-it-works.md, independent of
 * any one store (S3, DynamoDB, memory).
 * One instance serves any number of acquisitions; it is not re-entrant.
 */
export class Lock {
  readonly key: string
  /** Where the lock's record lives: what a `LockOperator` for this lock is made with. */
  readonly store: LockStore
  readonly owner: string
  readonly ttlMs: number
  readonly clockSkewMarginMs: number
  readonly #session: StoreSession
  readonly #recordRun: RunRecorder | undefined
  /** Leases this instance handed out, so it never takes one over from itself while it is live. */
  readonly #issued = new Set<Lease>()
  /** Each owner's acquisition under way here, which the owner's next call waits for. */
  readonly #turns = new Map<string, Promise<Acquisition>>()

  constructor(options: LockOptions) {
    validateLockOptions(options)
    this.key = options.key
    this.store = options.store
    this.owner = options.owner ?? defaultOwner()
    this.ttlMs = options.ttlMs ?? DEFAULT_TTL_MS
    this.clockSkewMarginMs = options.clockSkewMarginMs ?? DEFAULT_CLOCK_SKEW_MARGIN_MS
    validateTiming({ ttlMs: this.ttlMs, clockSkewMarginMs: this.clockSkewMarginMs }, 'Lock', this.key)
    this.#recordRun = options.recordRun
    this.#session = openSession(options, this.key, this.clockSkewMarginMs)
  }

  /** The local clock this lock judges time with. */
  get clock(): Clock {
    return this.#session.clock
  }

  /**
   * Tries to take the lock, waiting up to `waitMs` while it is held, and says what came of it:
   * `acquired` with the lease, `held` with the holder's record, or `skipped` when `skipIf`
   * matched. Costs one read and one write; one write only when our own last write, or a free
   * record read ahead (`readAhead`), is current.
   */
  tryAcquire(options: TryAcquireOptions = {}): Promise<Acquisition> {
    try {
      validateTiming({ waitMs: options.waitMs ?? 0 }, 'tryAcquire', this.key)
      this.#validateAcquisition(options)
    } catch (error) {
      return Promise.reject(error)
    }
    // Calls for one owner take turns: a second call while the first is under way would find the
    // first one's write naming its own owner, and take it over as a retry of a crashed run.
    const owner = options.owner ?? this.owner
    const turn = (this.#turns.get(owner) ?? Promise.resolve())
      .catch(() => undefined)
      .then(() => this.#tryAcquire(options))
    this.#turns.set(owner, turn)
    const forget = () => {
      if (this.#turns.get(owner) === turn) this.#turns.delete(owner)
    }
    turn.then(forget, forget)
    return turn
  }

  async #tryAcquire(options: TryAcquireOptions): Promise<Acquisition> {
    const { waitMs = 0, holdUntil } = options
    const clock = this.#session.clock
    // No point waiting for a lease that would be over by the time we got it.
    const waitFor = holdUntil === undefined ? waitMs : Math.min(waitMs, holdUntil - clock.now())
    if (waitFor <= 0) return this.#attemptOnce(options)
    const wait = new WaitDeadline(clock, waitFor, options.signal)
    const tryOptions = { ...options, signal: wait.signal }
    const backoff = { baseMs: 100, capMs: 2_000, ...options.backoff }
    let last: Acquisition | undefined
    try {
      for (let attempt = 0; ; attempt++) {
        last = await this.#attemptOnce(tryOptions, wait.endsAt)
        if (last.status !== AcquireStatus.Held) return last
        const delayMs = Math.min(
          wait.endsAt - clock.now(),
          backoffDelay(attempt, backoff, this.#session.random),
        )
        await clock.sleep(Math.max(0, delayMs), wait.signal)
        // Out of time, though the wait's own timer may not have fired yet: a try now would be cut
        // off at once, and a lease held until holdUntil (where the wait ends) would be over.
        if (clock.now() >= wait.endsAt) return last
      }
    } catch (error) {
      if (!wait.isOver(error)) throw error
      // Held at the last look: the wait ran out while looking again.
      if (last) return last
      throw new LockStoreError(
        `Lock "${this.key}": the store did not answer within the wait of ${waitMs} ms`,
        {
          key: this.key,
          retryable: true,
          cause: error,
        },
      )
    } finally {
      wait.cancel()
    }
  }

  /**
   * Takes the lock, waiting up to `waitMs` while it is held, with capped exponential backoff
   * and full jitter between tries. Rejects `LockTimeoutError` (naming the holder) when the wait runs out.
   */
  async acquire(options: AcquireOptions): Promise<Lease> {
    const startedAt = this.#session.clock.now()
    const result = await this.tryAcquire(options)
    if (result.status === AcquireStatus.Acquired) return result.lease
    const holder = result.status === AcquireStatus.Held ? result.holder : result.record
    throw new LockTimeoutError(
      `Lock "${this.key}" still held by ${holder.owner} after waiting ${options.waitMs} ms`,
      { key: this.key, waitedMs: this.#session.clock.now() - startedAt, holder },
    )
  }

  /**
   * Runs `routine` while holding the lock: acquires (waiting up to `waitMs`), renews every
   * `heartbeatMs`, aborts the routine's signal the moment the lease is lost, and releases when
   * the routine ends, whether it resolved or threw.
   */
  runExclusive<T>(routine: ExclusiveRoutine<T>, options: RunExclusiveOptions = {}): Promise<RunResult<T>> {
    return runExclusive(this, routine, options)
  }

  /** Throws `LockOptionsError` for options no attempt could use, before anything is sent. */
  #validateAcquisition(options: LeaseOptions): void {
    const { holdUntil } = options
    if (holdUntil === undefined) {
      const ttlMs = options.ttlMs ?? this.ttlMs
      validateTiming({ ttlMs, clockSkewMarginMs: this.clockSkewMarginMs }, 'tryAcquire', this.key)
    } else if (!Number.isFinite(holdUntil) || holdUntil <= this.#session.clock.now()) {
      throw new LockOptionsError(`holdUntil must be a time to come (epoch ms), got ${holdUntil}`, {
        key: this.key,
      })
    }
    validateOwner(options.owner ?? this.owner, this.key)
    validateTick(options.tick, this.key)
  }

  /** One read-and-write attempt; its store retries end at `endsAt` (the wait's end) if given. */
  async #attemptOnce(options: TryAcquireOptions, endsAt = Number.POSITIVE_INFINITY): Promise<Acquisition> {
    const attempt = this.#attemptOf(options, endsAt)
    const live = this.#liveLeaseOf(attempt.owner)
    if (live) return { status: AcquireStatus.Held, holder: live.record }

    const first = await this.#firstLook(attempt, options)
    if ('status' in first) return first
    let { cached, found } = first
    let deniedOnce = false
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const { snapshot } = found
      if (snapshot && options.skipIf?.(snapshot.record)) {
        // Our own last write may be stale (a pause resumed since): a skip is decided on a read.
        if (!cached) return { status: AcquireStatus.Skipped, record: snapshot.record }
        cached = undefined
        found = await this.#session.read(attempt.budget, attempt.signal)
        continue
      }
      // Another owner's live lease: held, unless this attempt is to replace it (a newer tick's run).
      const replacing =
        snapshot !== undefined &&
        !cached &&
        !this.#session.time.isFree(snapshot) &&
        snapshot.record.owner !== attempt.owner
      if (replacing && !options.replaceIf?.(snapshot.record)) {
        return { status: AcquireStatus.Held, holder: snapshot.record }
      }
      const { record, term, result } = await this.#writeLease(attempt, snapshot, replacing, found.sentAt)
      if (result.status === WriteStatus.Written) {
        return {
          status: AcquireStatus.Acquired,
          lease: this.#handOut(record, result.etag, term.ttlMs, attempt.holdUntil),
          ...(replacing && snapshot && { replaced: snapshot.record }),
        }
      }
      // A create refused where a read saw nothing: it exists after all, read it.
      if (result.status === WriteStatus.PreconditionFailed && !snapshot && found.unconfirmedAbsence) {
        deniedOnce = true
      }
      if (result.status === WriteStatus.Conflict) await this.#session.waitBeforeRetry(round, attempt.signal)
      if (cached) this.#session.forget(cached.etag)
      cached = undefined
      found = await this.#lookAgain(attempt, result, snapshot?.etag, deniedOnce)
    }
    throw new LockStoreError(`Lock "${this.key}": still contended after ${MAX_ROUNDS} rounds`, {
      key: this.key,
      retryable: true,
    })
  }

  /** What one attempt asks for, with this lock's defaults, and until when its store calls may retry. */
  #attemptOf(options: TryAcquireOptions, endsAt: number): Attempt {
    const { signal, holdUntil, tick, watchMs } = options
    const ttlMs = options.ttlMs ?? this.ttlMs
    const leaseEnd = holdUntil ?? this.#session.clock.now() + ttlMs - this.clockSkewMarginMs
    return {
      owner: options.owner ?? this.owner,
      ttlMs,
      holdUntil,
      tick,
      watchMs,
      signal,
      budget: Math.min(leaseEnd, endsAt),
    }
  }

  /**
   * What the attempt's first write goes over: written over blind, without a read first, our own
   * last write or a free record read ahead (`cached`); else, where the store takes a released
   * lock in one request, the lease that take landed or what it found; else what a read finds.
   */
  async #firstLook(
    attempt: Attempt,
    options: TryAcquireOptions,
  ): Promise<{ cached: OwnWrite | undefined; found: ReadOutcome } | Acquisition> {
    const own = this.#blindStartFor(attempt.owner)
    if (own) return { cached: own, found: foundIn({ ...own, serverLower: Number.NEGATIVE_INFINITY }) }
    if (this.#session.takes) {
      const took = await this.#take(attempt, options)
      return 'status' in took ? took : { cached: undefined, found: took.found }
    }
    const ahead = await this.#session.takeReadAhead()
    attempt.signal?.throwIfAborted()
    if (ahead) {
      // Fresh, its read's send time chooses the token, as any read's does; older, the write's:
      // W2's window runs from the read, and would grow with its age.
      const fresh = this.#session.clock.now() - ahead.sentAt <= READ_AHEAD_FRESH_MS
      return {
        cached: ahead.snapshot,
        found: { ...foundIn(ahead.snapshot), ...(fresh && { sentAt: ahead.sentAt }) },
      }
    }
    return { cached: undefined, found: await this.#session.read(attempt.budget, attempt.signal) }
  }

  /**
   * Writes the attempt's lease over `snapshot` (or creates the object). Written at once: the
   * lease is handed out the moment its write lands, and its token's wait (until the store's clock
   * has passed it) is paid by `lease.fencingToken()`, only where the token is used
   * (docs/guarantees.md, I2). Holding the lease back for that wait would let it be replaced or
   * force-released meanwhile, unseen. The token is chosen by the store's clock as it was when
   * the read that found `snapshot` was sent (`readAt`, a fresh read ahead's included; now, over
   * our own last write or an older read ahead): the write lands only over what that read found, so every token handed out
   * before is in it or was handed out before the read (W2 aside), and the read's round trip does
   * not add to the token's wait.
   */
  async #writeLease(
    attempt: Attempt,
    snapshot: Snapshot | undefined,
    replacing: boolean,
    readAt: number | undefined,
  ): Promise<{ record: LockRecord; term: LeaseTerm; result: WriteOutcome }> {
    const session = this.#session
    const { holdUntil } = attempt
    const token = session.nextToken(snapshot?.record.token, readAt)
    if (holdUntil !== undefined && holdUntil - session.clock.now() < 1) throw outOfTime(this.key, holdUntil)
    const term = this.#termOf(attempt, token)
    const record = acquisitionRecord(snapshot?.record, attempt.owner, token, term, {
      tick: attempt.tick,
      watchMs: attempt.watchMs,
      replacing,
      recordRun: this.#recordRun,
    })
    const result = await session.write(
      serializeRecord(record),
      snapshot?.etag ?? null,
      attempt.budget,
      attempt.signal,
    )
    return { record, term, result }
  }

  /**
   * Takes a released lock in one request (`LockStore.take`): the lease is handed out as it lands,
   * with the token before plus one, which its raise (`LeaseRaise`) replaces at once by one from
   * the store's clock before any is handed out (docs/guarantees.md, I2). A skip is decided on the
   * record the take wrote over, and gives it back as it was. Anything else (held, expired,
   * paused, absent, a lease over by the answer's clock) goes on as after a read of what is there.
   */
  async #take(attempt: Attempt, options: TryAcquireOptions): Promise<Acquisition | { found: ReadOutcome }> {
    const session = this.#session
    const { holdUntil } = attempt
    if (holdUntil !== undefined && holdUntil - session.clock.now() < 1) throw outOfTime(this.key, holdUntil)
    const { term, server } = session.time.takeTerm(attempt.ttlMs, holdUntil)
    const request: TakeRequest = {
      owner: attempt.owner,
      expires_at: term.expires_at,
      acquired_at: Math.round(term.serverNow) / 1000,
      ttl_ms: term.ttlMs,
      tokenBelow: Math.min(Number.MAX_SAFE_INTEGER - 1, Math.floor(server.upper) + AHEAD_OF_CLOCK_MS),
    }
    const outcome = await session.take(request, attempt.budget)
    if ('found' in outcome) return outcome
    const { taken, previous, sentAt } = outcome
    let deadline: number
    try {
      if (options.skipIf?.(previous ?? taken.record)) {
        await this.#giveBack(taken, previous, attempt.budget)
        return { status: AcquireStatus.Skipped, record: previous ?? taken.record }
      }
      // Judged by the answer's date, even a lease held to a fixed end: a take made before any
      // answer stamped its term by the local clock, which may be behind the store's, and the
      // store frees the lock by what the take wrote until the raise writes the term anew.
      deadline = Math.min(
        holdUntil ?? Number.POSITIVE_INFINITY,
        session.time.deadlineOf(taken.record.expires_at),
      )
      // A take stamped by a clock far behind the store's: ours, yet over. Taken over at once.
      if (deadline <= session.clock.now()) return { found: foundIn(taken) }
    } catch (error) {
      await this.#giveBack(taken, previous, attempt.budget).catch(() => undefined)
      throw error
    }
    const lease = this.#handOut(
      taken.record,
      taken.etag,
      term.ttlMs,
      deadline,
      this.#raiseOf(attempt, sentAt),
    )
    return { status: AcquireStatus.Acquired, lease }
  }

  /** The term of the attempt's lease with `token`: counted from the token, or held until `holdUntil`. */
  #termOf(attempt: Attempt, token: number): LeaseTerm {
    const { time } = this.#session
    const { holdUntil } = attempt
    return holdUntil === undefined ? time.termFromToken(token, attempt.ttlMs) : time.termUntil(holdUntil)
  }

  /**
   * How a taken lease's token is raised: a token from the store's clock, its term, its tick. The
   * clock is read as it was when the take that landed was sent (`takenAt`), as an acquisition
   * that reads first chooses its token before it writes: every token handed out before is in
   * the record taken or was handed out before that (W2 aside), so it is below the store's clock
   * then. Read later, the token would only wait longer: by the take's round trip and whatever
   * ran before the raise.
   */
  #raiseOf(attempt: Attempt, takenAt: number): LeaseRaise {
    return (current) => {
      const token = this.#session.nextToken(current.token, takenAt)
      const term = this.#termOf(attempt, token)
      const running = runningFields(token, attempt)
      const record = { ...current, token, expires_at: term.expires_at, ttl_ms: term.ttlMs, ...running }
      return { record, deadline: term.deadline }
    }
  }

  /** Puts back what a take wrote over (or frees the lease, when that is not known): nothing ran. */
  async #giveBack(taken: Snapshot, previous: LockRecord | undefined, budget: number): Promise<void> {
    const record = previous ?? withoutRunning({ ...taken.record, expires_at: 0 })
    const result = await this.#session.write(serializeRecord(record), taken.etag, budget)
    if (result.status === WriteStatus.Written) this.#session.remember(record, result.etag)
  }

  /**
   * What is there after a refused write (`result`, conditional on `expected`): another contender
   * won the round, or our cache was stale. The next round names the winner as the holder (one
   * read, paid only by a loser of a race; none when settling an ambiguous write read it already),
   * or takes the lock if the winner has released it already.
   */
  async #lookAgain(
    attempt: Attempt,
    result: WriteOutcome,
    expected: string | undefined,
    deniedOnce: boolean,
  ): Promise<ReadOutcome> {
    // A write that failed ambiguously was settled by a read: it shows what is there now.
    const found = result.current
      ? foundIn(result.current)
      : await this.#session.read(attempt.budget, attempt.signal)
    // Refused, yet the object is at the very version the write was conditional on: no other
    // round can do better on such an engine (dynalite's = on maps); say so, do not spin.
    const refused = result.status === WriteStatus.PreconditionFailed
    if (refused && expected !== undefined && found.snapshot?.etag === expected) {
      throw contradicted(this.key, expected)
    }
    if (deniedOnce && !found.snapshot && found.unconfirmedAbsence) throw unreadable(this.key)
    return found
  }

  /**
   * Our own last write, when an attempt by `owner` may write over it blind, without reading
   * first: it is a snapshot we can trust until someone else writes, and it released the lock
   * or names this very owner.
   */
  #blindStartFor(owner: string): OwnWrite | undefined {
    const last = this.#session.lastWrite
    return last && (last.record.expires_at === 0 || last.record.owner === owner) ? last : undefined
  }

  /**
   * A lease this instance handed out to `owner` that is still live. The instant take-over by a
   * matching owner is for a run that crashed, not for one that is still running here: while such
   * a lease is live, the lock is held, even for us.
   */
  #liveLeaseOf(owner: string): Lease | undefined {
    for (const lease of this.#issued) {
      // Stryker disable next-line CallExpression: a finished lease is passed over either way; forgetting it only frees memory
      if (lease.isReleased || lease.isLost || lease.remainingMs <= 0) this.#issued.delete(lease)
      else if (lease.owner === owner) return lease
    }
    return undefined
  }

  /**
   * The lease of `record`, written (as `etag`): handed out and tracked at once, before anything
   * else can run here. Its token is handed out later, by `fencingToken()`, once the store's
   * clock has passed it.
   */
  #handOut(
    record: LockRecord,
    etag: string,
    ttlMs: number,
    until: number | undefined,
    raise?: LeaseRaise,
  ): Lease {
    const session = this.#session
    session.remember(record, etag)
    // Its end (local time): the one it was held until, else by what we know of the store's clock now.
    const deadline = until ?? session.time.deadlineOf(record.expires_at)
    const lease = new Lease(session, record, etag, deadline, ttlMs, this.#recordRun, raise)
    this.#issued.add(lease)
    return lease
  }

  /**
   * Reads the lock ahead of the first acquisition, as a Lambda initialises: that acquisition
   * then writes at once, over the record as read, when it was free to take (released or
   * expired). Its write is conditional on the version read, so a record written since (another
   * run, an operator's pause) is read again, never overwritten. Never rejects.
   * @internal
   */
  readAhead(): Promise<void> {
    return this.#session.readAhead(this.#session.clock.now() + READ_BUDGET_MS)
  }
}

/** A snapshot known without a read (our own write, or a settle read's), as a read would report it. */
function foundIn(snapshot: Snapshot): ReadOutcome {
  return { snapshot, unconfirmedAbsence: false }
}

/** An acquisition for an invocation that ended while it was under way: nothing is written. */
function outOfTime(key: string, holdUntil: number): LockStoreError {
  return new LockStoreError(
    `Lock "${key}": the lease was to be held until ${new Date(holdUntil).toISOString()}, which passed ` +
      'before it could be written (the store answered too slowly, or the process stalled); nothing was written',
    { key, retryable: true },
  )
}

/** A lock object that a create finds and a read cannot see: the reader lacks s3:GetObject. */
function unreadable(key: string): LockStoreError {
  return new LockStoreError(`Lock "${key}": the lock object exists but may not be read (s3:GetObject)`, {
    key,
    retryable: false,
  })
}
