import { randomUUID } from 'node:crypto'
import { hostname } from 'node:os'
import type { BackoffOptions } from './backoff.js'
import type { Clock } from './clock.js'
import { type ConflictReason, LockOptionsError } from './errors.js'
import type { Lease } from './lease.js'
import type { HistoryEntry, LockRecord } from './record.js'
import type { LockStore } from './store.js'
import type { RetryOptions } from './store-session.js'

/** What a `Lock` is made with, what its calls take, and what they answer. */

/**
 * What a job keeps in its lock's record of a run that a write ends (`LockOptions.recordRun`):
 * `record` is what the write carries, `run` the run it ends; the answer is written instead.
 */
export type RunRecorder = (record: LockRecord, run: HistoryEntry) => LockRecord

export interface LockOptions {
  /** Where lock records live. */
  readonly store: LockStore
  /** The lock's name in the store (the S3 object key, or the DynamoDB partition key). */
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
  /**
   * Judge leases on this machine's clock when the store's answers carry no date (a proxy that
   * strips `Date`), instead of failing with `LockClockError`. Safe only when every contender's
   * clock is synchronised to within `clockSkewMarginMs`.
   * @default false
   */
  readonly trustLocalClock?: boolean
  /**
   * What the record keeps of each run that one of this lock's writes ends: a release given an
   * `outcome`, the free of a lease that ran out, an acquisition over a lease never released
   * (`abandoned`) or taken from a live run (`replaced`). Called on the record that write carries,
   * with no request added; the lease's own fields are written after it, so it cannot change
   * them. The run lifecycle (`singleton()`, `withSingleton()`, `exec`) keeps the last 10 runs in
   * `history` (`keepHistory` on `/extend`). A recorder that throws, or hands back no record
   * (`LockOptionsError`), fails that write: nothing is written. @default none: nothing is kept
   */
  readonly recordRun?: RunRecorder
  /** Local clock, for tests. @default the system clock */
  readonly clock?: Clock
  /** Source of jitter, for tests. @default Math.random */
  readonly random?: () => number
}

/** What every way of taking the lock accepts. */
export interface LeaseOptions {
  /** Lease length for this acquisition. @default the lock's `ttlMs` */
  readonly ttlMs?: number
  /**
   * Instead of `ttlMs`: hold the lease until this local time (epoch ms), for a holder that is
   * stopped by then whatever happens, as the Lambda runtime stops an invocation at its deadline.
   * The lease then needs no margin of its own: `expires_at` is the latest the store's clock can
   * read at that time, and contenders may take over a margin after it, so a crashed holder frees
   * the lock about `margin` after its deadline instead of `2 × margin` after.
   */
  readonly holdUntil?: number
  /** Owner for this acquisition, e.g. the invocation's request id. @default the lock's `owner` */
  readonly owner?: string
  /**
   * The tick this run is for, written in the record's `running` while it holds the lock: what a
   * run of a newer tick compares before it replaces this one (`replaceIf`). @default none
   */
  readonly tick?: string
  /**
   * With `tick`: the holder promises to read the record at least this often (ms) and to stop
   * when replaced (`lease.checkCurrent()`, as the lifecycle's replaceable runs do), written as
   * `running.watch_ms`. Only such a holder may be replaced by a newer tick's run. @default none
   */
  readonly watchMs?: number
  /**
   * Abandons the attempt; the promise rejects with the signal's reason. A write already sent is
   * not abandoned: its answer decides, and a write that landed resolves as `acquired` (the lease
   * is yours to release), so that no lease lives on that nobody holds.
   */
  readonly signal?: AbortSignal
}

/** `lock.tryAcquire`: one try unless `waitMs` asks to keep trying while the lock is held. */
export interface TryAcquireOptions extends LeaseOptions {
  /** How long to keep trying while the lock is held, in ms. @default 0 */
  readonly waitMs?: number
  /** Delays between tries. @default { baseMs: 100, capMs: 2000 } */
  readonly backoff?: BackoffOptions
  /**
   * Leave the lock alone, writing nothing, when this says so of the current record (e.g. its
   * `last_run` shows the work is done): the attempt comes back `skipped` with that record.
   */
  readonly skipIf?: (record: LockRecord) => boolean
  /**
   * Take the lock from a live holder, writing nothing else, when this says so of its record:
   * the write goes over it with a higher token, so the holder's next renewal, release and
   * fenced writes are refused (`LockLostError`, reason `replaced`). The attempt comes back
   * `acquired` with the record it replaced. Asked after `skipIf`, and only of another owner's
   * live lease.
   */
  readonly replaceIf?: (holder: LockRecord) => boolean
}

/** `lock.acquire`: waits up to `waitMs` for the lease, or rejects `LockTimeoutError`. */
export interface AcquireOptions extends LeaseOptions {
  /** How long to keep trying while the lock is held, in ms. */
  readonly waitMs: number
  /** Delays between tries. @default { baseMs: 100, capMs: 2000 } */
  readonly backoff?: BackoffOptions
}

/** What an acquisition attempt came to. */
export const AcquireStatus = {
  Acquired: 'acquired',
  /** Another owner holds the lock (after the whole wait, if one was asked for). */
  Held: 'held',
  /** `skipIf` matched the current record; nothing was written. */
  Skipped: 'skipped',
} as const
export type AcquireStatus = (typeof AcquireStatus)[keyof typeof AcquireStatus]

export type Acquisition =
  | {
      readonly status: typeof AcquireStatus.Acquired
      readonly lease: Lease
      /** The live holder's record this acquisition replaced (`replaceIf`), if it replaced one. */
      readonly replaced?: LockRecord
    }
  | {
      readonly status: typeof AcquireStatus.Held
      /** The record that showed the lock held; after a lost race for the write, the winner's. */
      readonly holder: LockRecord
    }
  | { readonly status: typeof AcquireStatus.Skipped; readonly record: LockRecord }

/** Why a lock that is not held still cannot be acquired. */
export type BlockedReason =
  | typeof ConflictReason.RecordTooLarge
  | typeof ConflictReason.TokensExhausted
  | typeof ConflictReason.RecordAheadOfClock

/** What `inspect` reports. */
export interface LockInfo {
  readonly token: number
  /** How many times the lock was acquired, when the record counts it (written since 0.2). */
  readonly run?: number
  /** The record's `expires_at` (epoch 0 once released). */
  readonly expiresAt: Date
  readonly owner: string
  /** Whether a contender would see it as held right now. */
  readonly held: boolean
  /**
   * Set when no acquisition can take this record, held or not, however long it waits: the
   * record leaves no room for an acquisition's fields within `MAX_RECORD_BYTES` (judged for this
   * lock's owner and ttl; `reset` repairs it), or its token is the last safe integer or more than
   * 10 s ahead of the store's clock (`reset` with `backToClock` repairs both). Acquiring rejects
   * `LockConflictError` with this reason and writes nothing.
   */
  readonly blocked?: BlockedReason
  readonly etag: string
  readonly record: LockRecord
}

export function validateLockOptions(options: LockOptions): void {
  const fail = (message: string): never => {
    throw new LockOptionsError(message, { key: options.key })
  }
  if (typeof options.key !== 'string' || options.key.length === 0) fail('key must be a non-empty string')
  if (Buffer.byteLength(options.key) > 1024) fail('key must be at most 1024 bytes')
  if (!options.store) fail('store is required')
  const { owner, retry } = options
  if (owner !== undefined) validateOwner(owner, options.key)
  if (options.recordRun !== undefined && typeof options.recordRun !== 'function') {
    fail('recordRun must be a function (record, run) => record')
  }
  if (retry?.attempts !== undefined && (!Number.isSafeInteger(retry.attempts) || retry.attempts < 1)) {
    fail(`retry.attempts must be an integer >= 1, got ${retry.attempts}`)
  }
}

export function validateOwner(owner: unknown, key: string, what = 'owner'): void {
  if (typeof owner !== 'string' || owner.length === 0 || owner.length > 1024) {
    throw new LockOptionsError(`${what} must be a non-empty string of at most 1024 characters`, { key })
  }
}

/**
 * A run's tick, as `running.tick` and a history entry keep it: a string (every reader refuses
 * any other), of at most 1024 characters, like an owner.
 */
export function validateTick(tick: unknown, key: string): void {
  if (tick !== undefined && (typeof tick !== 'string' || tick.length > 1024)) {
    const got = typeof tick === 'string' ? `${tick.length} characters` : typeof tick
    throw new LockOptionsError(`tick must be a string of at most 1024 characters, got ${got}`, { key })
  }
}

/** Who acts when not told: this host and process, and a few random characters per instance. */
export function defaultOwner(): string {
  return `${hostname()}/${process.pid}/${randomUUID().slice(0, 8)}`
}
