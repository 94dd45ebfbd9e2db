import { LockLostError, LockOptionsError, LockStoreError, LostReason } from './errors.js'
import { withoutRunning, withRunRecorded } from './holder-record.js'
import { type RunRecorder, validateTick } from './lock-options.js'
import {
  type JsonValue,
  type LockRecord,
  RunOutcome,
  rebaseOnOperatorWrite,
  serializeRecord,
} from './record.js'
import { patchedRecord, type RecordPatch } from './record-patch.js'
import { type WriteResult, WriteStatus } from './store.js'
import { contradicted, type Snapshot, type StoreSession } from './store-session.js'

/** How long a release may keep retrying transient failures when the lease has little time left. */
const MIN_RELEASE_BUDGET_MS = 5_000

const LeaseStatus = { Held: 'held', Released: 'released', Lost: 'lost' } as const
type LeaseStatus = (typeof LeaseStatus)[keyof typeof LeaseStatus]

/**
 * How a taken lease's token is raised (`LockStore.take` writes the token before it plus one,
 * which a record written back from outside may have put below one handed out already): the
 * record to write over `current`, with a token from the store's clock, and the lease's new local
 * end.
 */
export type LeaseRaise = (current: LockRecord) => { readonly record: LockRecord; readonly deadline: number }

/** What `fencingToken` takes. */
export interface FencingTokenOptions {
  /** Stops waiting; rejects with the signal's reason. */
  readonly signal?: AbortSignal
}

/** What hands out a fencing token once it is safe to use: a `Lease`, or `context.singleton`. */
export interface FencingTokenSource {
  /** The fencing token, once the store's clock has passed it (see `Lease.fencingToken`). */
  fencingToken(options?: FencingTokenOptions): Promise<number>
}

/**
 * A held lock, from the moment its write landed. `fencingToken()` resolves the fencing token
 * once it is safe to use: pass it along with every write the holder makes, so the target can
 * refuse a stale holder. Writes on one lease run one at a time, so a heartbeat and a checkpoint
 * never race each other's etag.
 *
 * The lease is the one place that knows it is over: when a write finds it taken over or
 * deleted, or when its local end passes without a successful renewal (a watchdog, no write
 * needed), it becomes lost and aborts `signal` with the `LockLostError`.
 */
export class Lease {
  readonly key: string
  readonly owner: string
  /**
   * Written with the lease, handed out only by `fencingToken()` (docs/guarantees.md, I2). A
   * taken lease's first token (the one before plus one) is replaced by its raise.
   */
  #token: number
  /** A taken lease's raise (`LeaseRaise`) until it landed: no token is handed out before. */
  #pendingRaise: LeaseRaise | undefined
  /** The raise under way, if any. */
  #raising: Promise<void> | undefined
  /** Cancels the timer that sends the pending raise once the holder's code has had its turn. */
  #cancelRaiseStart: () => void = () => {}
  /** The wait until the store's clock has passed the token, shared by every caller. */
  #tokenWait: Promise<void> | undefined
  /** A token was awaited: from then on the estimate of the store's clock is kept narrow. */
  #fencing = false
  #record: LockRecord
  #etag: string
  #deadline: number
  #ttlMs: number
  #status: LeaseStatus = LeaseStatus.Held
  #lostError: LockLostError | undefined
  readonly #controller = new AbortController()
  #queue: Promise<unknown> = Promise.resolve()
  #cancelWatchdog: () => void = () => {}
  readonly #session: StoreSession
  readonly #recordRun: RunRecorder | undefined

  /** @internal Made by `Lock.tryAcquire`. */
  constructor(
    session: StoreSession,
    record: LockRecord,
    etag: string,
    deadline: number,
    ttlMs: number,
    recordRun?: RunRecorder,
    raise?: LeaseRaise,
  ) {
    this.#session = session
    this.#recordRun = recordRun
    this.key = session.key
    this.#token = record.token
    this.owner = record.owner
    this.#record = record
    this.#etag = etag
    this.#deadline = deadline
    this.#ttlMs = ttlMs
    this.#armWatchdog()
    if (raise) {
      this.#pendingRaise = raise
      // In the background, once the holder's code has had its turn (a handler starts a round
      // trip's worth of CPU sooner on a cold start), so that the token's wait overlaps the run. A
      // token asked for, or any other write of the lease, sends it at once; a raise that fails is
      // tried again by the next of them, and one that finds the lease gone has lost it.
      this.#cancelRaiseStart = session.clock.schedule(0, () => this.#startRaise())
    }
  }

  /** Sends the pending raise, if there is one and it is not under way already. */
  #startRaise(): void {
    if (this.#pendingRaise) this.#raise().catch(() => undefined)
  }

  /**
   * Writes a taken lease's token from the store's clock (docs/guarantees.md, I2); the lease's
   * other writes queue behind it.
   */
  #raise(): Promise<void> {
    if (!this.#pendingRaise) return Promise.resolve()
    this.#cancelRaiseStart()
    this.#raising ??= this.#enqueue(async () => {
      const raise = this.#pendingRaise
      if (!raise) return
      this.#assertHeld()
      const raised = raise(this.#record)
      await this.#write(raised.record, Math.max(this.#deadline, this.#session.clock.now()))
      this.#pendingRaise = undefined
      this.#token = raised.record.token
      this.#deadline = raised.deadline
      this.#armWatchdog()
    }).finally(() => {
      this.#raising = undefined
    })
    return this.#raising
  }

  /**
   * When the holder must consider the lease over, by the local clock. It is earlier than the
   * record's `expires_at` by the clock-skew margin, so no contender can take over before it.
   */
  get expiresAt(): Date {
    return new Date(this.#deadline)
  }

  /** Milliseconds left before `expiresAt` (negative once past). */
  get remainingMs(): number {
    return this.#deadline - this.#session.clock.now()
  }

  /**
   * The fencing token, once it is safe to use: when the store's clock has surely passed it, so
   * that every later holder's token is higher, also if the lock object is deleted meanwhile
   * (docs/guarantees.md, I2). The lease is held from the moment the acquisition resolved; only
   * code that fences pays this wait, and it overlaps whatever that code did before: none warm
   * when the estimate of the store's clock is narrow, up to about a second on a process's first
   * lease (while it waits, a few requests ask the store the time, to end the wait sooner).
   * Rejects `LockLostError` when the lease is lost, released or past its end by then.
   */
  async fencingToken(options: FencingTokenOptions = {}): Promise<number> {
    this.#assertLive()
    if (this.#tokenWait === undefined) {
      const wait = this.#raise()
        .then(() => this.#session.time.awaitToken(this.#token, this.signal))
        .then(() => {
          this.#fencing = true
          if (this.#status === LeaseStatus.Held) this.#armWatchdog()
        })
      this.#tokenWait = wait
      // A caller that gave up on its own signal leaves the shared wait unobserved; a raise that
      // failed is tried again by the next call.
      wait.catch(() => {
        if (this.#tokenWait === wait && this.#pendingRaise) this.#tokenWait = undefined
      })
    }
    await untilAborted(this.#tokenWait, options.signal)
    this.#assertLive()
    return this.#token
  }

  /**
   * @internal The token the lease's record holds for good, for logs (not for fencing, see
   * `fencingToken`): undefined while a taken lease's raise has yet to land, whose record still
   * holds a token that will never be handed out.
   */
  get recordedToken(): number | undefined {
    return this.#pendingRaise ? undefined : this.#token
  }

  /** @internal The record as we last wrote it (its token included: not for fencing, see `fencingToken`). */
  get record(): LockRecord {
    return this.#record
  }

  /** The etag of our last write. */
  get etag(): string {
    return this.#etag
  }

  /**
   * Aborted, with the `LockLostError` as reason, as soon as the lease is lost: a write found it
   * taken over or deleted, or its `expiresAt` passed without a successful renewal.
   */
  get signal(): AbortSignal {
    return this.#controller.signal
  }

  /** Neither released nor lost (its local end may still pass before the watchdog says so). */
  get isHeld(): boolean {
    return this.#status === LeaseStatus.Held
  }

  /** Why the lease was lost, once it is. */
  get lostError(): LockLostError | undefined {
    return this.#lostError
  }

  get isLost(): boolean {
    return this.#status === LeaseStatus.Lost
  }

  get isReleased(): boolean {
    return this.#status === LeaseStatus.Released
  }

  /** Extends the lease to `ttlMs` from now. Rejects `LockLostError` when it was taken over. */
  renew(ttlMs: number = this.#ttlMs, patch: RecordPatch = {}): Promise<void> {
    if (!Number.isFinite(ttlMs) || ttlMs <= this.#session.marginMs) {
      return Promise.reject(
        new LockOptionsError(`ttlMs must be a finite number above the clock-skew margin, got ${ttlMs}`, {
          key: this.key,
        }),
      )
    }
    return this.#serialized(async () => {
      this.#assertHeld()
      const term = this.#session.time.termFor(ttlMs)
      const record = this.#patched(patch, { expires_at: term.expires_at, ttl_ms: ttlMs })
      await this.#write(record, Math.max(this.#deadline, this.#session.clock.now()))
      // Counted from before the write was sent, like expires_at.
      this.#deadline = term.deadline
      this.#ttlMs = ttlMs
      this.#armWatchdog()
    })
  }

  /**
   * Stores a checkpoint (the record's `state`) without extending the lease, so that a holder
   * taking over unfinished work can resume from it. Rejects `LockLostError` when the lease was
   * taken over.
   */
  saveCheckpoint(checkpoint: JsonValue): Promise<void> {
    return this.#update({ state: checkpoint })
  }

  /**
   * Stores `cursor` in the lock record without extending the lease: where the work stands for
   * every later run, kept until replaced. Rejects `LockLostError` when the lease was taken over.
   */
  saveCursor(cursor: JsonValue): Promise<void> {
    return this.#update({ cursor })
  }

  /** Writes `patch` to the lock record without extending the lease (same token, conditional). */
  #update(patch: RecordPatch): Promise<void> {
    return this.#serialized(async () => {
      this.#assertHeld()
      await this.#write(this.#patched(patch, {}), Math.max(this.#deadline, this.#session.clock.now()))
    })
  }

  /**
   * Reads the record to learn whether the lease is still ours, without writing: a run that may be
   * replaced (`onHeld: 'replace'`) or ended by an operator hears of it within one call, at the
   * price of a read. Rejects `LockLostError` (and aborts `signal`) when another token holds the
   * record or the object is gone; an operator's pause or resume since our last write is no loss.
   */
  checkCurrent(): Promise<void> {
    return this.#serialized(async () => {
      this.#assertHeld()
      const { snapshot } = await this.#session.read(Math.max(this.#deadline, this.#session.clock.now()))
      if (this.#status !== LeaseStatus.Held) this.#assertHeld()
      if (!snapshot) throw this.#lose(LostReason.Deleted, 'the lock object was deleted')
      if (snapshot.record.token !== this.#token) throw this.#takenOver(snapshot.record)
    })
  }

  /**
   * Ends the lease: `expires_at` becomes 0, the token stays. Rejects `LockLostError` when the
   * lease was lost: nothing is written when it was taken over; when it ran out unrenewed, the
   * record is freed only if nobody wrote since (and the lease still counts as lost). Releasing
   * twice is a no-op.
   */
  release(patch: RecordPatch = {}): Promise<void> {
    return this.#serialized(async () => {
      if (this.#status === LeaseStatus.Released) return
      validateTick(patch.tick, this.#session.key)
      if (this.#lostError?.reason === LostReason.Expired) await this.#freeIfStillOurs(patch.tick)
      this.#assertHeld()
      const budget = Math.max(this.#deadline, this.#session.clock.now() + MIN_RELEASE_BUDGET_MS)
      const released = withoutRunning(this.#patched(patch, { expires_at: 0 }))
      await this.#write(patch.outcome ? this.#withRun(released, patch.outcome, patch.tick) : released, budget)
      this.#status = LeaseStatus.Released
      this.#cancelWatchdog()
    })
  }

  /**
   * A lease that ran out unrenewed is over for its holder, but the record may still be ours: a
   * write conditional on our last etag lands only if nobody wrote since, so it can free the lock
   * for the next run at once instead of at expiry. Best effort; the lease stays lost.
   */
  async #freeIfStillOurs(tick: string | undefined): Promise<void> {
    const record = this.#withRun(withoutRunning(this.#patched({}, { expires_at: 0 })), RunOutcome.Lost, tick)
    const deadline = this.#session.clock.now() + MIN_RELEASE_BUDGET_MS
    const result = await this.#session.write(serializeRecord(record), this.#etag, deadline).catch(() => null)
    if (result?.status === WriteStatus.Written) this.#session.remember(record, result.etag)
  }

  /** `record` with this run, ending now by the store's clock, as the lock's run recorder keeps it. */
  #withRun(record: LockRecord, outcome: RunOutcome, tick: string | undefined): LockRecord {
    if (!this.#recordRun) return record
    const ended = Math.round(this.#session.time.serverTime().mid) / 1000
    return withRunRecorded(record, this.#recordRun, {
      token: this.#token,
      ...(tick !== undefined && { tick }),
      owner: this.owner,
      started: this.#record.acquired_at ?? ended,
      ended,
      outcome,
    })
  }

  #patched(patch: RecordPatch, fields: Partial<LockRecord>): LockRecord {
    return patchedRecord({ ...this.#record, ...fields }, patch, {
      key: this.key,
      limits: this.#session.limits,
    })
  }

  /**
   * Writes `record` on our last etag; when someone else wrote since, carries their change over
   * (`#carriedOver`) and writes again, or ends the lease.
   */
  async #write(record: LockRecord, budgetDeadline: number): Promise<void> {
    let body = serializeRecord(record)
    for (let conflicts = 0; ; conflicts++) {
      const result = await this.#send(body, budgetDeadline)
      // The watchdog may have declared the lease over while the write was on its way.
      if (this.#status === LeaseStatus.Lost && this.#lostError) throw this.#lostError
      if (result.status === WriteStatus.Written) {
        this.#record = record
        this.#etag = result.etag
        this.#session.remember(record, result.etag)
        return
      }
      if (result.status === WriteStatus.Absent)
        throw this.#lose(LostReason.Deleted, 'the lock object was deleted')
      const next =
        result.status === WriteStatus.PreconditionFailed
          ? await this.#afterPreconditionFailed(record)
          : await this.#afterConflict(record, conflicts, budgetDeadline)
      // Rebased on someone else's write; otherwise the very bytes go again.
      if (next !== record) body = serializeRecord(next)
      record = next
    }
  }

  /** One conditional write of `body`; a lease past its end that could not be written is lost. */
  async #send(body: string, budgetDeadline: number): Promise<WriteResult> {
    try {
      return await this.#session.write(body, this.#etag, budgetDeadline)
    } catch (error) {
      if (this.#session.clock.now() >= this.#deadline && this.#status !== LeaseStatus.Released) {
        throw this.#lose(LostReason.Expired, 'could not be renewed before it expired', undefined, error)
      }
      throw error
    }
  }

  /** Our etag is no longer the object's: the record to write instead, or the lease ends. */
  async #afterPreconditionFailed(record: LockRecord): Promise<LockRecord> {
    // Some engines (Ceph) answer a missing object's If-Match with 412 rather than 404.
    const current = await this.#session.read(this.#session.clock.now() + 1_000).then(
      (found) => found.snapshot,
      () => null,
    )
    if (current === undefined) throw this.#lose(LostReason.Deleted, 'the lock object was deleted')
    // The object is as our condition named it, yet the condition failed: the engine does not
    // evaluate conditions as S3 and DynamoDB do (dynalite's = on maps). Writing again would
    // spin until the lease ran out; say so at once, and keep the lease (nobody else wrote).
    if (current?.etag === this.#etag) throw contradicted(this.key, this.#etag)
    return this.#carriedOver(current, record)
  }

  /** Someone else's conditional write was in flight: if it landed, as after a 412; if not, ours may. */
  async #afterConflict(record: LockRecord, conflicts: number, budgetDeadline: number): Promise<LockRecord> {
    const { snapshot: current } = await this.#session.read(budgetDeadline)
    // It landed: an operator's pause or resume is carried over, as after a 412.
    if (current?.etag !== this.#etag) return this.#carriedOver(current, record)
    // Each conflict is someone else's write in flight: try again while time is left.
    await this.#session.waitBeforeRetry(conflicts, undefined, budgetDeadline)
    if (this.#session.clock.now() >= budgetDeadline) {
      throw new LockStoreError(
        `Lock "${this.key}": ${conflicts + 1} write conflicts in a row, out of time to retry`,
        {
          key: this.key,
          retryable: true,
        },
      )
    }
    return record
  }

  /**
   * Someone wrote the record since our last write (`current`, or null when it could not be read):
   * an operator's pause or resume is still our lease, and `record` is rebased on their write (the
   * record to write now); anything else ends the lease.
   */
  #carriedOver(current: Snapshot | null | undefined, record: LockRecord): LockRecord {
    const rebased = current && rebaseOnOperatorWrite(this.#record, current.record, record)
    if (!current || !rebased) throw this.#takenOver(current?.record)
    this.#record = current.record
    this.#etag = current.etag
    return rebased
  }

  /**
   * Someone else wrote the record: a run of a newer tick that replaced ours, an operator who
   * ended our lease on purpose (another run may have taken the lock since), or any other holder.
   */
  #takenOver(current: LockRecord | undefined): LockLostError {
    if (current?.replaced?.token === this.#token) {
      return this.#lose(LostReason.Replaced, 'a run of a newer tick replaced it', current)
    }
    const ended = current?.ended_by
    if (ended?.token === this.#token) {
      const how = ended.action === 'pause' ? 'paused the job with --now' : `ended it (${ended.action})`
      return this.#lose(LostReason.ReleasedByOperator, `operator ${ended.by} ${how}`, current)
    }
    return this.#lose(LostReason.TakenOver, 'another holder wrote the lock object', current)
  }

  #lose(reason: LostReason, why: string, current?: LockRecord, cause?: unknown): LockLostError {
    const holder =
      current && current.token !== this.#token ? ` (now token ${current.token}, ${current.owner})` : ''
    const error = new LockLostError(
      `Lease on "${this.key}" with token ${this.#token} was lost: ${why}${holder}`,
      {
        key: this.key,
        reason,
        token: this.#token,
        ...(current && { current }),
        cause,
      },
    )
    this.#status = LeaseStatus.Lost
    this.#lostError = error
    this.#cancelWatchdog()
    this.#session.forget(this.#etag)
    this.#controller.abort(error)
    return error
  }

  /**
   * Declares the lease lost when its local end passes with no successful renewal since; until
   * then, once its token was awaited, keeps the estimate of the store's clock narrow for the next
   * runs (`narrowWhileHeld`).
   */
  #armWatchdog(): void {
    this.#cancelWatchdog()
    const cancelTimer = this.#session.clock.schedule(this.remainingMs, () => {
      if (this.#status !== LeaseStatus.Held) return
      // Timers may fire a fraction of a millisecond early: the lease is over only at its end.
      if (this.remainingMs > 0) return this.#armWatchdog()
      this.#lose(LostReason.Expired, 'it expired before it was renewed')
    })
    // Probes are paid for only by leases whose token is used.
    const stopNarrowing = this.#fencing ? this.#session.time.narrowWhileHeld(this.#deadline) : () => {}
    this.#cancelWatchdog = () => {
      cancelTimer()
      stopNarrowing()
    }
  }

  /** Held, and its local end not past (the watchdog's timer may not have fired yet). */
  #assertLive(): void {
    this.#assertHeld()
    if (this.remainingMs <= 0) throw this.#lose(LostReason.Expired, 'it expired before it was renewed')
  }

  #assertHeld(): void {
    if (this.#status === LeaseStatus.Lost && this.#lostError) throw this.#lostError
    if (this.#status === LeaseStatus.Released) {
      throw new LockLostError(`Lease on "${this.key}" with token ${this.#token} was already released`, {
        key: this.key,
        reason: LostReason.Released,
        token: this.#token,
      })
    }
  }

  /** Runs `work` after the lease's writes queued before it, a pending raise first. */
  #serialized<T>(work: () => Promise<T>): Promise<T> {
    this.#startRaise()
    return this.#enqueue(work)
  }

  #enqueue<T>(work: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(work, work)
    this.#queue = run.catch(() => undefined)
    return run
  }
}

/** `promise`, or the reason of `signal` as soon as it aborts. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise
  if (signal.aborted) return Promise.reject(signal.reason)
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason)
    signal.addEventListener('abort', onAbort, { once: true })
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort))
  })
}
