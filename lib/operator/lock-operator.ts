import { ConflictReason, LockConflictError } from '../core/errors.js'
import { type ForceReleaseOptions, forceRelease } from '../core/force-release.js'
import { acquisitionRecord } from '../core/holder-record.js'
import {
  type BlockedReason,
  defaultOwner,
  type LockInfo,
  type LockOptions,
  validateLockOptions,
  validateOwner,
} from '../core/lock-options.js'
import { OPERATOR_BUDGET_MS } from '../core/operator-write.js'
import { type LockRecord, MAX_RECORD_BYTES, serializeRecord } from '../core/record.js'
import { type ResetOptions, reset } from '../core/reset.js'
import { openSession, type Snapshot, type StoreSession } from '../core/store-session.js'
import { DEFAULT_CLOCK_SKEW_MARGIN_MS, DEFAULT_TTL_MS, validateTiming } from '../core/timing.js'
import {
  type PauseOptions,
  type PauseResult,
  pause,
  type ResumeResult,
  resume,
} from '../schedule/pause-writes.js'

/**
 * What a `LockOperator` is made with: the job's store and key, who acts, and the job's lease
 * settings, by which `inspect` judges whether the job's next acquisition could take the record.
 */
export interface LockOperatorOptions
  extends Pick<
    LockOptions,
    | 'store'
    | 'key'
    | 'ttlMs'
    | 'clockSkewMarginMs'
    | 'retry'
    | 'trustLocalClock'
    | 'recordRun'
    | 'clock'
    | 'random'
  > {
  /**
   * Who acts, named in a pause (`paused.by`) and in a lease it ends (`ended_by.operator`).
   * @default `<hostname>/<pid>/<random>`
   */
  readonly operator?: string
}

/**
 * The operator's side of a lock: reads it, and pauses, resumes, frees or repairs its job. Apart
 * from `Lock`, the contender's side, so that a job's code holds no call that ends another run's
 * lease. The CLI's `inspect`, `pause`, `resume`, `release` and `reset` are these calls.
 *
 * @example
 * const operator = new LockOperator({ store: new S3LockStore({ bucket: 'my-locks' }), key: 'locks/nightly-report' })
 * await operator.pause({ note: 'the upstream API is down' })
 */
export class LockOperator {
  readonly key: string
  /** Who acts (`LockOperatorOptions.operator`). */
  readonly operator: string
  readonly #ttlMs: number
  readonly #recordRun: LockOptions['recordRun']
  readonly #session: StoreSession

  constructor(options: LockOperatorOptions) {
    validateLockOptions(options)
    const operator = options.operator ?? defaultOwner()
    validateOwner(operator, options.key, 'operator')
    this.key = options.key
    this.operator = operator
    this.#ttlMs = options.ttlMs ?? DEFAULT_TTL_MS
    this.#recordRun = options.recordRun
    const clockSkewMarginMs = options.clockSkewMarginMs ?? DEFAULT_CLOCK_SKEW_MARGIN_MS
    validateTiming({ ttlMs: this.#ttlMs, clockSkewMarginMs }, 'LockOperator', this.key)
    this.#session = openSession(options, this.key, clockSkewMarginMs)
  }

  /** Reads the lock without changing it; `null` when it was never taken. */
  async inspect(options: { signal?: AbortSignal } = {}): Promise<LockInfo | null> {
    const { snapshot } = await this.#session.read(
      this.#session.clock.now() + OPERATOR_BUDGET_MS,
      options.signal,
    )
    if (!snapshot) return null
    const { record, etag } = snapshot
    const blocked = this.#blockedBy(snapshot)
    return {
      token: record.token,
      ...(record.run !== undefined && { run: record.run }),
      expiresAt: new Date(record.expires_at * 1000),
      owner: record.owner,
      held: !this.#session.time.isFree(snapshot),
      ...(blocked && { blocked }),
      etag,
      record,
    }
  }

  /** Why the job's next acquisition would be refused over `snapshot` however long it waited. */
  #blockedBy(snapshot: Snapshot): BlockedReason | undefined {
    let next: LockRecord
    try {
      const token = this.#session.nextToken(snapshot.record.token)
      const term = this.#session.time.termFromToken(token, this.#ttlMs)
      next = acquisitionRecord(snapshot.record, this.operator, token, term, { recordRun: this.#recordRun })
    } catch (error) {
      if (
        error instanceof LockConflictError &&
        (error.reason === ConflictReason.TokensExhausted ||
          error.reason === ConflictReason.RecordAheadOfClock)
      ) {
        return error.reason
      }
      throw error
    }
    const size = Buffer.byteLength(serializeRecord(next), 'utf8')
    return size > MAX_RECORD_BYTES ? ConflictReason.RecordTooLarge : undefined
  }

  /**
   * Frees a lock that a stuck or crashed run still holds, at once. The token goes up by one, so
   * the old holder's fenced writes fail from now on and its renew and release are refused.
   * Resolves the record written, or `null` when there is no lock object. Writes only over the
   * version it read, or `options.etag` (what the operator judged). Refuses (`LockConflictError`,
   * nothing written) a token no acquisition could follow either: `tokens-exhausted`,
   * `record-ahead-of-clock`.
   */
  forceRelease(options: ForceReleaseOptions = {}): Promise<LockRecord | null> {
    return forceRelease(this.#session, this.operator, options)
  }

  /**
   * Replaces whatever is at the key (a corrupted object included) with a released record
   * carrying `token`. Refuses (`LockConflictError`, nothing written) a token at or below any the
   * object shows, as a number or a string (`token-too-low`): lowering it would let stale holders
   * pass fences; and, unless `force`, an object it cannot prove released or expired
   * (`not-released`): a held record, or a body that shows no past `expires_at`. With
   * `backToClock` instead of `token`, writes a token from the store's clock, lower than the
   * object's if need be: the repair of `record-ahead-of-clock` and `tokens-exhausted`.
   */
  reset(options: ResetOptions): Promise<LockRecord> {
    return reset(this.#session, this.operator, options)
  }

  /**
   * Pauses the job, naming this operator as who paused it; the lifecycle's runs skip (`paused`)
   * until `resume`. A held lock stays held unless `now` (see `PauseOptions`). Resolves `null`
   * when there is no lock object.
   */
  pause(options: PauseOptions = {}): Promise<PauseResult | null> {
    return pause(this.#session, this.operator, options)
  }

  /** Resumes a paused job (see `resume`). Resolves `null` when there is no lock object. */
  resume(): Promise<ResumeResult | null> {
    return resume(this.#session)
  }
}
