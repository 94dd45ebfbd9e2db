import { randomUUID } from 'node:crypto'
import { hostname } from 'node:os'
import { type BackoffOptions, backoffDelay } from './backoff.js'
import { type Clock, systemClock } from './clock.js'
import { LockContext, type RetryOptions, type Snapshot } from './context.js'
import { LockError, LockOptionsError, LockStoreError, LockTimeoutError } from './errors.js'
import { Lease } from './lease.js'
import { type LockRecord, parseRecord, RECORD_VERSION, serializeRecord } from './record.js'
import { type LockStore, ReadStatus, WriteStatus } from './store.js'

export interface LockOptions {
  /** Where lock records live. */
  readonly store: LockStore
  /** The lock's name in the store (the S3 object key). */
  readonly key: string
  /** Lease length. @default 60000 */
  readonly ttlMs?: number
  /**
   * Who we are, written into the record. Must name one execution: a record whose owner equals
   * ours is taken over at once, as the retry of a crashed run would (unless this very instance
   * still holds a live lease for it). Two instances must never share an owner.
   * @default `<hostname>/<pid>/<random>`, unique per lock instance
   */
  readonly owner?: string
  /**
   * Disagreement allowed between clocks, in ms. Holders treat their lease as ending this much
   * early; contenders treat it as ending this much late.
   * @default 2000
   */
  readonly clockSkewMarginMs?: number
  /** Retries of transient store failures. @default { attempts: 4, baseMs: 50, capMs: 2000 } */
  readonly retry?: RetryOptions
  /** Local clock, for tests. @default the system clock */
  readonly clock?: Clock
  /** Source of jitter, for tests. @default Math.random */
  readonly random?: () => number
}

export interface AcquireOptions {
  /** Lease length for this acquisition. @default the lock's `ttlMs` */
  readonly ttlMs?: number
  /** Owner for this acquisition, e.g. the invocation's request id. @default the lock's `owner` */
  readonly owner?: string
  /** Abandons the attempt; the promise rejects with the signal's reason. */
  readonly signal?: AbortSignal
  /**
   * Leave the lock alone, writing nothing, when this says so of the current record (e.g. its
   * `last_run` shows the work is done): `tryAcquire` resolves `null` with `lastSeen` set.
   */
  readonly skipIf?: (record: LockRecord) => boolean
}

export interface WaitOptions extends AcquireOptions {
  /** How long to keep trying while the lock is held, in ms. */
  readonly waitMs: number
  /** Delays between tries. @default { baseMs: 100, capMs: 2000 } */
  readonly backoff?: BackoffOptions
}

/** What `inspect` reports. */
export interface LockInfo {
  readonly token: number
  /** The record's `expires_at` (epoch 0 once released). */
  readonly expiresAt: Date
  readonly owner: string
  /** Whether a contender would see it as held right now. */
  readonly held: boolean
  readonly etag: string
  readonly record: LockRecord
}

export const DEFAULT_TTL_MS = 60_000
export const DEFAULT_CLOCK_SKEW_MARGIN_MS = 2_000
const MAX_TTL_MS = 7 * 24 * 3_600_000
const MAX_MARGIN_MS = 10 * 60_000
/** Read-and-write rounds one `tryAcquire` may spend on 409s and stale caches. */
const MAX_ROUNDS = 8
/** Budget for store retries of calls that are not tied to a lease. */
const READ_BUDGET_MS = 10_000

/**
 * A named lock on a `LockStore`: the lease protocol of DESIGN.md, independent of S3.
 * One instance serves any number of acquisitions; it is not re-entrant.
 */
export class Lock {
  readonly key: string
  readonly owner: string
  readonly ttlMs: number
  readonly clockSkewMarginMs: number
  #context: LockContext
  #lastSeen: LockRecord | undefined
  /** Leases this instance handed out, so it never takes one over from itself while it is live. */
  readonly #issued = new Set<Lease>()

  constructor(options: LockOptions) {
    validateLockOptions(options)
    this.key = options.key
    this.owner = options.owner ?? `${hostname()}/${process.pid}/${randomUUID().slice(0, 8)}`
    this.ttlMs = options.ttlMs ?? DEFAULT_TTL_MS
    this.clockSkewMarginMs = options.clockSkewMarginMs ?? DEFAULT_CLOCK_SKEW_MARGIN_MS
    if (this.clockSkewMarginMs >= this.ttlMs) {
      throw new LockOptionsError(
        `clockSkewMarginMs (${this.clockSkewMarginMs}) must be smaller than ttlMs (${this.ttlMs}), or the lease would end before it starts`,
        { key: options.key },
      )
    }
    this.#context = new LockContext(
      options.store,
      this.key,
      this.clockSkewMarginMs,
      options.clock ?? systemClock,
      options.retry ?? {},
      options.random ?? Math.random,
    )
  }

  /**
   * The record that made the last `tryAcquire` come back empty: who holds the lock. Undefined
   * when it lost a race for the write, not having read the winner's record.
   */
  get lastSeen(): LockRecord | undefined {
    return this.#lastSeen
  }

  /**
   * Takes the lock if it is free (absent, released, expired) or ours, else resolves `null`.
   * Costs one read and one write; one write only when our own last write is still current.
   */
  async tryAcquire(options: AcquireOptions = {}): Promise<Lease | null> {
    const context = this.#context
    const ttlMs = options.ttlMs ?? this.ttlMs
    this.#validateTtl(ttlMs)
    const { signal } = options
    const owner = options.owner ?? this.owner
    const budget = context.clock.now() + ttlMs - this.clockSkewMarginMs
    this.#lastSeen = undefined

    // The instant take-over by a matching owner is for a run that crashed, not for one that is
    // still running here: while such a lease is live, the lock is held, even for us.
    for (const lease of this.#issued) {
      if (lease.isReleased || lease.isLost || lease.remainingMs <= 0) this.#issued.delete(lease)
      else if (lease.owner === owner) {
        this.#lastSeen = lease.record
        return null
      }
    }

    // Our own last write is a snapshot we can trust until someone else writes: when it released
    // the lock (or names this very owner), try the write blind, without reading first.
    const last = context.lastWrite
    const cached = last && (last.record.expires_at === 0 || last.record.owner === owner) ? last : undefined
    let fromCache = cached !== undefined
    let snapshot: Snapshot | undefined = cached
      ? { ...cached, serverLower: Number.NEGATIVE_INFINITY }
      : await context.read(budget, signal)

    let deniedOnce = false
    for (let round = 0; round < MAX_ROUNDS; round++) {
      if (snapshot && options.skipIf?.(snapshot.record)) {
        this.#lastSeen = snapshot.record
        return null
      }
      if (snapshot && !fromCache && !context.isFree(snapshot) && snapshot.record.owner !== owner) {
        this.#lastSeen = snapshot.record
        return null
      }
      const composedAt = context.clock.now()
      const record: LockRecord = {
        ...snapshot?.record,
        v: RECORD_VERSION,
        token: (snapshot ? snapshot.record.token : context.highestToken) + 1,
        expires_at: context.expiresAtFor(ttlMs),
        owner,
        acquired_at: Math.round(context.serverClock.upperNow()) / 1000,
        ttl_ms: ttlMs,
      }
      const result = await context.write(serializeRecord(record), snapshot?.etag ?? null, budget, signal)

      switch (result.status) {
        case WriteStatus.Written: {
          context.remember(record, result.etag)
          this.#lastSeen = record
          const lease = new Lease(
            context,
            record,
            result.etag,
            composedAt + ttlMs - this.clockSkewMarginMs,
            ttlMs,
          )
          this.#issued.add(lease)
          return lease
        }
        case WriteStatus.PreconditionFailed:
          if (!snapshot && context.lastAbsenceUnconfirmed) {
            deniedOnce = true
            break // it exists after all: read it
          }
          if (!fromCache) return null // another contender won this round
          break // our cache was stale: read what is there now
        case WriteStatus.Conflict:
          await context.pause(round, signal)
          break
        case WriteStatus.Absent:
          break // the object vanished under an If-Match: read again, then create
      }
      if (fromCache) context.lastWrite = undefined
      fromCache = false
      snapshot = await context.read(budget, signal)
      if (deniedOnce && !snapshot && context.lastAbsenceUnconfirmed) {
        throw new LockStoreError(
          `Lock "${this.key}": the lock object exists but may not be read (s3:GetObject)`,
          {
            key: this.key,
            retryable: false,
          },
        )
      }
    }
    throw new LockStoreError(`Lock "${this.key}": still contended after ${MAX_ROUNDS} rounds`, {
      key: this.key,
      retryable: true,
    })
  }

  /**
   * Takes the lock, waiting up to `waitMs` while it is held, with capped exponential backoff
   * and full jitter between tries. Rejects `LockTimeoutError` when the wait runs out.
   */
  acquire(options: WaitOptions & { skipIf?: undefined }): Promise<Lease>
  /** With `skipIf`, resolves `null` as soon as it matches the current record. */
  acquire(options: WaitOptions): Promise<Lease | null>
  async acquire(options: WaitOptions): Promise<Lease | null> {
    const { waitMs, signal, skipIf } = options
    if (!Number.isFinite(waitMs) || waitMs < 0) {
      throw new LockOptionsError(`waitMs must be a finite number >= 0, got ${waitMs}`, { key: this.key })
    }
    const clock = this.#context.clock
    const startedAt = clock.now()
    const backoff = { baseMs: 100, capMs: 2_000, ...options.backoff }
    for (let attempt = 0; ; attempt++) {
      const lease = await this.tryAcquire(options)
      if (lease) return lease
      if (skipIf && this.#lastSeen && skipIf(this.#lastSeen)) return null
      const left = startedAt + waitMs - clock.now()
      if (left <= 0) {
        throw new LockTimeoutError(
          `Lock "${this.key}" still held by ${this.#lastSeen?.owner ?? 'another owner'} after waiting ${waitMs} ms`,
          {
            key: this.key,
            waitedMs: clock.now() - startedAt,
            ...(this.#lastSeen && { holder: this.#lastSeen }),
          },
        )
      }
      await clock.sleep(Math.min(left, backoffDelay(attempt, backoff, this.#context.random)), signal)
    }
  }

  /** Reads the lock without changing it; `null` when it was never taken. */
  async inspect(options: { signal?: AbortSignal } = {}): Promise<LockInfo | null> {
    const snapshot = await this.#context.read(this.#context.clock.now() + READ_BUDGET_MS, options.signal)
    if (!snapshot) return null
    const { record, etag } = snapshot
    return {
      token: record.token,
      expiresAt: new Date(record.expires_at * 1000),
      owner: record.owner,
      held: !this.#context.isFree(snapshot),
      etag,
      record,
    }
  }

  /**
   * Operator action: frees a lock that a stuck or crashed run still holds, at once. The token
   * goes up by one, so the old holder's fenced writes fail from now on and its renew and release
   * are refused. Resolves the record written, or `null` when there is no lock object.
   */
  async forceRelease(): Promise<LockRecord | null> {
    const context = this.#context
    const snapshot = await context.read(context.clock.now() + READ_BUDGET_MS)
    if (!snapshot) return null
    const record: LockRecord = {
      ...snapshot.record,
      token: snapshot.record.token + 1,
      expires_at: 0,
      owner: `force-released by ${this.owner}`,
    }
    const result = await context.write(
      serializeRecord(record),
      snapshot.etag,
      context.clock.now() + READ_BUDGET_MS,
    )
    if (result.status !== WriteStatus.Written) {
      throw new LockError(`Lock "${this.key}" changed while being released (${result.status}); try again`, {
        key: this.key,
      })
    }
    context.remember(record, result.etag)
    return record
  }

  /**
   * Operator action: replaces whatever is at the key (a corrupted object included) with a
   * released record carrying `token`. Refuses when a valid record is held or has a token at
   * least as high, since lowering the token would let stale holders pass fences.
   */
  async reset(options: { token: number }): Promise<LockRecord> {
    const { token } = options
    if (!Number.isSafeInteger(token) || token < 0) {
      throw new LockOptionsError(`reset token must be a non-negative safe integer, got ${token}`, {
        key: this.key,
      })
    }
    if (token <= this.#context.highestToken) {
      throw new LockOptionsError(
        `reset token ${token} must be above ${this.#context.highestToken}, already handed out`,
        { key: this.key },
      )
    }
    const { store } = this.#context
    const current = await store.read(this.key)
    if (current.status === ReadStatus.Found) {
      let record: LockRecord | undefined
      try {
        record = parseRecord(current.body, this.key, current.etag)
      } catch {
        // Corrupted: exactly what reset is for. Still never go below a token it may carry.
        const found = tokenIn(current.body)
        if (found !== undefined && token <= found) {
          throw new LockOptionsError(`reset token ${token} must be above the token ${found} in the object`, {
            key: this.key,
          })
        }
      }
      if (record && record.expires_at !== 0) {
        throw new LockOptionsError(
          `Lock "${this.key}" is not released (owner ${record.owner}); refusing to reset`,
          {
            key: this.key,
          },
        )
      }
      if (record && token <= record.token) {
        throw new LockOptionsError(`reset token ${token} must be above the current token ${record.token}`, {
          key: this.key,
        })
      }
    }
    const record: LockRecord = { v: RECORD_VERSION, token, expires_at: 0, owner: `reset by ${this.owner}` }
    const body = serializeRecord(record)
    const result =
      current.status === ReadStatus.Found
        ? await store.replace(this.key, body, current.etag)
        : await store.create(this.key, body)
    if (result.status !== WriteStatus.Written) {
      throw new LockError(
        `Lock "${this.key}" changed while being reset (${result.status}); nothing was written`,
        {
          key: this.key,
        },
      )
    }
    this.#context.remember(record, result.etag)
    return record
  }

  #validateTtl(ttlMs: number): void {
    if (!Number.isFinite(ttlMs) || ttlMs <= this.clockSkewMarginMs || ttlMs > MAX_TTL_MS) {
      throw new LockOptionsError(
        `ttlMs must be a finite number above clockSkewMarginMs (${this.clockSkewMarginMs}) and at most ${MAX_TTL_MS}, got ${ttlMs}`,
        { key: this.key },
      )
    }
  }
}

/** A numeric `token` in a body that is JSON but not a valid record, if there is one. */
function tokenIn(body: string): number | undefined {
  try {
    const token = (JSON.parse(body) as { token?: unknown } | null)?.token
    return typeof token === 'number' && Number.isFinite(token) ? token : undefined
  } catch {
    return undefined
  }
}

function validateLockOptions(options: LockOptions): void {
  const fail = (message: string): never => {
    throw new LockOptionsError(message, { key: options.key })
  }
  if (typeof options.key !== 'string' || options.key.length === 0) fail('key must be a non-empty string')
  if (Buffer.byteLength(options.key, 'utf8') > 1024) fail('key must be at most 1024 bytes')
  if (!options.store) fail('store is required')
  const { ttlMs, clockSkewMarginMs, owner, retry } = options
  if (ttlMs !== undefined && (!Number.isFinite(ttlMs) || ttlMs <= 0 || ttlMs > MAX_TTL_MS)) {
    fail(`ttlMs must be a finite number in (0, ${MAX_TTL_MS}], got ${ttlMs}`)
  }
  if (
    clockSkewMarginMs !== undefined &&
    (!Number.isFinite(clockSkewMarginMs) || clockSkewMarginMs < 0 || clockSkewMarginMs > MAX_MARGIN_MS)
  ) {
    fail(`clockSkewMarginMs must be a finite number in [0, ${MAX_MARGIN_MS}], got ${clockSkewMarginMs}`)
  }
  if (owner !== undefined && (typeof owner !== 'string' || owner.length === 0 || owner.length > 1024)) {
    fail('owner must be a non-empty string of at most 1024 characters')
  }
  if (retry?.attempts !== undefined && (!Number.isSafeInteger(retry.attempts) || retry.attempts < 1)) {
    fail(`retry.attempts must be an integer >= 1, got ${retry.attempts}`)
  }
}
