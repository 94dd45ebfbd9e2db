import type { Clock } from '../core/clock.js'
import { LockLostError, LockStoreError, LostReason } from '../core/errors.js'
import { keepAlive } from '../core/heartbeat.js'
import type { Lease } from '../core/lease.js'
import { RunOutcome } from '../core/record.js'
import { watchLease } from '../core/watch.js'
import { countFailures } from '../schedule/failures.js'
import { pauseView } from '../schedule/pause.js'
import type { SingletonHandle } from './handler-context.js'
import type { RunTiming } from './lease-timing.js'
import { Outcome } from './outcome.js'
import { asError, lossReport, type Report } from './reporter.js'

export interface RunSettings {
  readonly key: string
  readonly tick: string | undefined
  /**
   * Whether a completed run records its tick as done (`last_run`): not for a tick ahead of the
   * store's clock. @default true
   */
  readonly recordTick?: boolean
  readonly timing: RunTiming
  readonly clock: Clock
  readonly report: Report
  readonly throwOnLost: boolean
  /** Pause the job after this many failed runs in a row. */
  readonly pauseAfterFailures?: number | undefined
  /** A replaceable run reads its record this often, to stop within that once replaced. */
  readonly watchMs?: number | undefined
}

/**
 * Kept back from the invocation's end for the report of a release the store has not answered by
 * then: Lambda ends the invocation at its end, and what is still to be said is lost with it.
 */
const RELEASE_REPORT_RESERVE_MS = 100

/**
 * The token to name in a report: the one the lease's record holds for good, none while a taken
 * lease's raise has yet to land (its record holds a token nobody is handed).
 */
export function tokenOf(lease: Lease): { token?: number } {
  const token = lease.recordedToken
  return token === undefined ? {} : { token }
}

/** Each handle's lease: for the simulator's oracle, which is handed only what handlers are. */
const handleLeases = new WeakMap<SingletonHandle, Lease>()

/** @internal The lease behind a run's handle (test/sim's oracle watches it); not for handlers. */
export function leaseBehind(handle: SingletonHandle): Lease | undefined {
  return handleLeases.get(handle)
}

/**
 * One invocation's run while it holds the lease: heartbeats (when the lease does not cover the
 * invocation), the handler's signal, lost-lease reporting, and the release. The lease says when
 * it is over; this only listens and reports, once.
 */
export class SingletonRun {
  readonly handle: SingletonHandle
  readonly #lease: Lease
  readonly #settings: RunSettings
  readonly #controller = new AbortController()
  readonly #stopHeartbeat: () => void
  readonly #stopWatching: () => void
  // A signal aborts once: the loss is reported once, with no flag to keep.
  readonly #onLost = (): void => this.#reportLost()
  /** When the lease was taken, by the local clock: how long it was held is reported on release. */
  readonly #acquiredAt: number
  #ended: Promise<void> | undefined

  /** @internal Made by `SingletonLifecycle.start`, whose bookkeeping a run made elsewhere would miss. */
  constructor(lease: Lease, settings: RunSettings) {
    this.#lease = lease
    this.#settings = settings
    const { key, tick, timing, clock, report } = settings
    this.#acquiredAt = clock.now()
    lease.signal.addEventListener('abort', this.#onLost, { once: true })
    this.#stopHeartbeat =
      timing.covers === 'invocation'
        ? () => {}
        : keepAlive(lease, {
            everyMs: timing.heartbeatMs,
            ttlMs: timing.ttlMs,
            clock,
            ...(timing.invocationEnd !== undefined && { until: timing.invocationEnd }),
            onError: (error) =>
              report('warn', 'heartbeat failed; retrying', {
                outcome: Outcome.Error,
                key,
                ...tokenOf(lease),
                error: asError(error),
              }),
          })
    this.#stopWatching =
      settings.watchMs === undefined ? () => {} : watchLease(lease, { everyMs: settings.watchMs, clock })
    this.handle = {
      key,
      fencingToken: (options) => lease.fencingToken(options),
      get expiresAt() {
        return lease.expiresAt
      },
      signal: this.#controller.signal,
      checkpoint: lease.record.state,
      saveCheckpoint: (checkpoint) => lease.saveCheckpoint(checkpoint),
      cursor: lease.record.cursor,
      saveCursor: (cursor) => lease.saveCursor(cursor),
      tick,
    }
    handleLeases.set(this.handle, lease)
  }

  /**
   * The run's lease, for the lifecycle and `exec`. Handlers get the handle, which cannot release
   * it: the release is the lifecycle's, with the run's outcome (`last_run`, history, failures).
   */
  get lease(): Lease {
    return this.#lease
  }

  /** Whether the invocation's time is over by the clock: a run still open then was abandoned. */
  get overdue(): boolean {
    const end = this.#settings.timing.invocationEnd
    return end !== undefined && end <= this.#settings.clock.now()
  }

  /**
   * Ends the run: stops the heartbeat and the handler's signal, then releases; when the handler
   * succeeded, the release records the tick as done and clears the checkpoint. Rejects only for
   * a lost lease with `throwOnLost`. Ending twice ends once. The release counts a failed run
   * (`error`, when known, goes into the note of a pause that `pauseAfterFailures` starts).
   * @internal Adapters call `SingletonLifecycle.end(run, …)`, which also settles the lifecycle's
   * own bookkeeping (the run in flight, the failure count) that this alone would leave behind.
   */
  end(succeeded: boolean, error?: unknown): Promise<void> {
    this.#ended ??= this.#end(succeeded, error)
    return this.#ended
  }

  /**
   * Now by the store's clock, as the lease's writes date a record (`history`, an operator's
   * `paused.at`): its acquisition's time, plus the time held since by the local clock, whose
   * offset from the store's does not matter then.
   */
  #storeNow(): number {
    const { clock } = this.#settings
    const acquiredAt = this.#lease.record.acquired_at
    return acquiredAt === undefined ? clock.now() : acquiredAt * 1000 + (clock.now() - this.#acquiredAt)
  }

  async #end(succeeded: boolean, failure: unknown): Promise<void> {
    const lease = this.#lease
    const { key, tick, report, throwOnLost } = this.#settings
    this.#stopHeartbeat()
    this.#stopWatching()
    // Stop the handler first: if it is still running (an early timeout), it must not go on
    // working while the next holder starts. An AbortError, as any aborted signal gives: code that
    // passed the signal on (fetch, fencedPut) rejects with it, and callers already expect it.
    this.#controller.abort(new DOMException(`lease on "${key}" ended with the invocation`, 'AbortError'))
    // From here on a loss is news only when the release itself meets it, and the release reports
    // it: the lease's signal would excuse a lease that runs out with its invocation (#reportLost).
    lease.signal.removeEventListener('abort', this.#onLost)
    const lostBefore = lease.lostError !== undefined
    try {
      if (!lease.isReleased) {
        const counted = countFailures(lease.record, {
          succeeded,
          error: failure,
          pauseAfterFailures: this.#settings.pauseAfterFailures,
          by: lease.owner,
          now: this.#storeNow(),
        })
        // A completed run spends its checkpoint: the next run (the next tick) starts afresh.
        // The run goes into the record's history with this same write (when history is kept).
        const run = { ...(tick !== undefined && { tick }) }
        const lastRun = succeeded && tick !== undefined && this.#settings.recordTick !== false
        await this.#beforeInvocationEnds(
          lease.release({
            ...(succeeded && { clearState: true }),
            fields: { ...counted.schedule, ...(lastRun && { last_run: tick }) },
            outcome: succeeded ? RunOutcome.Completed : RunOutcome.Failed,
            ...run,
          }),
        )
        report('info', 'lock released', {
          outcome: Outcome.Released,
          key,
          ...tokenOf(lease),
          ...(tick && { tick }),
          heldMs: this.#settings.clock.now() - this.#acquiredAt,
          completed: succeeded,
        })
        const paused = lease.record.paused
        if (counted.pause && paused?.at === counted.pause.at && paused.by === counted.pause.by) {
          report('warn', `paused after ${counted.failures} failed runs in a row; resume to run again`, {
            outcome: Outcome.Paused,
            key,
            ...tokenOf(lease),
            owner: lease.owner,
            ...(tick && { tick }),
            paused: pauseView(paused),
            failures: counted.failures,
          })
        }
      }
    } catch (error) {
      this.#reportReleaseFailed(error, lostBefore)
    }
    if (lease.lostError && succeeded && throwOnLost) throw lease.lostError
  }

  /**
   * `release`, given up shortly before the invocation ends, when it has one: a store that does not
   * answer (a host cut off from it) would keep the release trying until Lambda ended the
   * invocation, with nothing said. The release goes on meanwhile, and may yet land.
   */
  async #beforeInvocationEnds(release: Promise<void>): Promise<void> {
    const { timing, clock, key } = this.#settings
    const end = timing.invocationEnd
    const now = clock.now()
    // Over already: a run swept by a later invocation (its adapter never ended it), whose own
    // end is not this run's.
    if (end === undefined || end <= now) return release
    release.catch(() => undefined)
    // Within the reserve already (a handler that returned at its last moment): half what is left.
    const cutAt = Math.max(end - RELEASE_REPORT_RESERVE_MS, now + (end - now) / 2)
    let cancel = (): void => {}
    const cut = new Promise<never>((_, reject) => {
      cancel = clock.schedule(cutAt - now, () =>
        reject(
          new LockStoreError(
            `Lock "${key}": the store had not answered the release ${Math.round(end - cutAt)} ms before ` +
              "the invocation's end, when Lambda ends it; the release may still land",
            { key, retryable: true },
          ),
        ),
      )
    })
    try {
      await Promise.race([release, cut])
    } finally {
      cancel()
    }
  }

  /**
   * Why the release failed, unless it failed for a loss already reported when it happened. A
   * lease that ran out while the release was being written (a store that kept refusing it) is
   * no overlap, but the lock stays held until it expires: an error, never silence.
   */
  #reportReleaseFailed(error: unknown, lostBefore: boolean): void {
    if (error instanceof LockLostError && lostBefore) return
    if (error instanceof LockLostError && error.reason !== LostReason.Expired) {
      this.#reportLost()
      return
    }
    const { key, tick, report } = this.#settings
    report(
      'error',
      `lock could not be released; it stays held until its lease expires: ${asError(error).message}`,
      {
        outcome: Outcome.ReleaseFailed,
        key,
        ...tokenOf(this.#lease),
        ...(tick && { tick }),
        error: asError(error),
      },
    )
  }

  #reportLost(): void {
    const error = this.#lease.lostError
    // A lease held to the invocation's deadline that runs out then lost nothing: the invocation
    // was over (Lambda stopped it, or an adapter abandoned the run after the handler returned).
    const covering = this.#settings.timing.covers === 'invocation'
    if (covering && error?.reason === LostReason.Expired && this.overdue) return
    this.#controller.abort(error)
    const { level, message, outcome, fields } = lossReport(error)
    this.#settings.report(level, message, {
      outcome,
      key: this.#settings.key,
      ...tokenOf(this.#lease),
      ...fields,
      ...(this.#settings.tick && { tick: this.#settings.tick }),
      ...(error && { error }),
    })
  }
}
