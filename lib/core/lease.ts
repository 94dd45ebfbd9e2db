import type { LockContext } from './context.js'
import { LockError, LockLostError, LockOptionsError, LostReason } from './errors.js'
import { type JsonValue, type LockRecord, MAX_STATE_BYTES, serializeRecord } from './record.js'
import { type WriteResult, WriteStatus } from './store.js'

/** Fields a holder may set on the record when it writes. */
export interface RecordPatch {
  /** A checkpoint for the next holder (`LockRecord.state`). `undefined` leaves it as it is. */
  readonly state?: JsonValue
  /** Id of the tick this holder completed (`LockRecord.last_run`). */
  readonly lastRun?: string
}

/** How long a release may keep retrying transient failures when the lease has little time left. */
const MIN_RELEASE_BUDGET_MS = 5_000
/** 409 answers in a row before a write gives up. */
const MAX_CONFLICTS = 8

const LeaseStatus = { Held: 'held', Released: 'released', Lost: 'lost' } as const
type LeaseStatus = (typeof LeaseStatus)[keyof typeof LeaseStatus]

/**
 * A held lock. `token` is the fencing token: pass it along with every write the holder makes,
 * so the target can refuse a stale holder. Writes on one lease run one at a time, so a
 * heartbeat and a checkpoint never race each other's etag.
 */
export class Lease {
  readonly key: string
  readonly token: number
  readonly owner: string
  #record: LockRecord
  #etag: string
  #deadline: number
  #ttlMs: number
  #status: LeaseStatus = LeaseStatus.Held
  #lostError: LockLostError | undefined
  readonly #controller = new AbortController()
  #queue: Promise<unknown> = Promise.resolve()

  /** @internal Made by `Lock.tryAcquire`. */
  constructor(
    private readonly context: LockContext,
    record: LockRecord,
    etag: string,
    deadline: number,
    ttlMs: number,
  ) {
    this.key = context.key
    this.token = record.token
    this.owner = record.owner
    this.#record = record
    this.#etag = etag
    this.#deadline = deadline
    this.#ttlMs = ttlMs
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
    return this.#deadline - this.context.clock.now()
  }

  /** The record as we last wrote it. */
  get record(): LockRecord {
    return this.#record
  }

  /** The etag of our last write. */
  get etag(): string {
    return this.#etag
  }

  /** Aborted, with the `LockLostError` as reason, as soon as a write finds the lease lost. */
  get signal(): AbortSignal {
    return this.#controller.signal
  }

  get isLost(): boolean {
    return this.#status === LeaseStatus.Lost
  }

  get isReleased(): boolean {
    return this.#status === LeaseStatus.Released
  }

  /** Extends the lease to `ttlMs` from now. Rejects `LockLostError` when it was taken over. */
  renew(ttlMs: number = this.#ttlMs, patch: RecordPatch = {}): Promise<void> {
    if (!Number.isFinite(ttlMs) || ttlMs <= this.context.marginMs) {
      return Promise.reject(
        new LockOptionsError(`ttlMs must be a finite number above the clock-skew margin, got ${ttlMs}`, {
          key: this.key,
        }),
      )
    }
    return this.#serialized(async () => {
      this.#assertHeld()
      const startedAt = this.context.clock.now()
      const record = this.#patched(patch, { expires_at: this.context.expiresAtFor(ttlMs), ttl_ms: ttlMs })
      await this.#write(record, Math.max(this.#deadline, startedAt))
      this.#deadline = startedAt + ttlMs - this.context.marginMs
      this.#ttlMs = ttlMs
    })
  }

  /**
   * Stores `state` in the lock record without extending the lease, so the next holder can
   * resume from it. Rejects `LockLostError` when the lease was taken over.
   */
  checkpoint(state: JsonValue): Promise<void> {
    return this.#serialized(async () => {
      this.#assertHeld()
      await this.#write(this.#patched({ state }, {}), Math.max(this.#deadline, this.context.clock.now()))
    })
  }

  /**
   * Ends the lease: `expires_at` becomes 0, the token stays. Rejects `LockLostError` (and writes
   * nothing) when the lease had been taken over. Releasing twice is a no-op.
   */
  release(patch: RecordPatch = {}): Promise<void> {
    return this.#serialized(async () => {
      if (this.#status === LeaseStatus.Released) return
      this.#assertHeld()
      const budget = Math.max(this.#deadline, this.context.clock.now() + MIN_RELEASE_BUDGET_MS)
      await this.#write(this.#patched(patch, { expires_at: 0 }), budget)
      this.#status = LeaseStatus.Released
    })
  }

  #patched(patch: RecordPatch, fields: Partial<LockRecord>): LockRecord {
    const next: Record<string, unknown> = { ...this.#record, ...fields }
    if (patch.lastRun !== undefined) next.last_run = patch.lastRun
    if (patch.state !== undefined) {
      const size = Buffer.byteLength(JSON.stringify(patch.state), 'utf8')
      if (size > MAX_STATE_BYTES) {
        throw new LockOptionsError(`Checkpoint state is ${size} bytes; the limit is ${MAX_STATE_BYTES}`, {
          key: this.key,
        })
      }
      next.state = patch.state
    }
    return next as LockRecord
  }

  async #write(record: LockRecord, budgetDeadline: number): Promise<void> {
    const body = serializeRecord(record)
    for (let conflicts = 0; conflicts < MAX_CONFLICTS; conflicts++) {
      let result: WriteResult
      try {
        result = await this.context.write(body, this.#etag, budgetDeadline)
      } catch (error) {
        if (this.context.clock.now() >= this.#deadline && this.#status !== LeaseStatus.Released) {
          throw this.#lose(LostReason.Expired, 'could not be renewed before it expired', undefined, error)
        }
        throw error
      }
      switch (result.status) {
        case WriteStatus.Written:
          this.#record = record
          this.#etag = result.etag
          this.context.remember(record, result.etag)
          return
        case WriteStatus.Absent:
          throw this.#lose(LostReason.Deleted, 'the lock object was deleted')
        case WriteStatus.PreconditionFailed: {
          // Some engines (Ceph) answer a missing object's If-Match with 412 rather than 404.
          const current = await this.context.read(this.context.clock.now() + 1_000).catch(() => null)
          if (current === undefined) throw this.#lose(LostReason.Deleted, 'the lock object was deleted')
          throw this.#lose(LostReason.TakenOver, 'another holder wrote the lock object', current?.record)
        }
        case WriteStatus.Conflict: {
          // Someone else's conditional write was in flight. If it did not land, ours may.
          const current = await this.context.read(budgetDeadline)
          if (current?.etag !== this.#etag) {
            throw this.#lose(LostReason.TakenOver, 'another holder wrote the lock object', current?.record)
          }
          await this.context.pause(conflicts)
        }
      }
    }
    throw new LockError(`Lock "${this.key}": gave up after ${MAX_CONFLICTS} write conflicts in a row`, {
      key: this.key,
    })
  }

  #lose(reason: LostReason, why: string, current?: LockRecord, cause?: unknown): LockLostError {
    const holder =
      current && current.token !== this.token ? ` (now token ${current.token}, ${current.owner})` : ''
    const error = new LockLostError(
      `Lease on "${this.key}" with token ${this.token} was lost: ${why}${holder}`,
      {
        key: this.key,
        reason,
        token: this.token,
        ...(current && { current }),
        cause,
      },
    )
    this.#status = LeaseStatus.Lost
    this.#lostError = error
    if (this.context.lastWrite?.etag === this.#etag) this.context.lastWrite = undefined
    this.#controller.abort(error)
    return error
  }

  #assertHeld(): void {
    if (this.#status === LeaseStatus.Lost && this.#lostError) throw this.#lostError
    if (this.#status === LeaseStatus.Released) {
      throw new LockLostError(`Lease on "${this.key}" with token ${this.token} was already released`, {
        key: this.key,
        reason: LostReason.Released,
        token: this.token,
      })
    }
  }

  #serialized<T>(work: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(work, work)
    this.#queue = run.catch(() => undefined)
    return run
  }
}
