import { randomUUID } from 'node:crypto'
import { LOCK_ENV } from '../config.js'
import { type Clock, systemClock } from '../core/clock.js'
import { learnStoreClock } from '../core/clock-probe.js'
import { LockOptionsError, LockStoreError } from '../core/errors.js'
import { runningTick, runningWatchMs } from '../core/holder-record.js'
import { AcquireStatus, type Acquisition } from '../core/lock-options.js'
import type { LockRecord } from '../core/record.js'
import type { LockStore } from '../core/store.js'
import { isNewerTick, isTickDone, tickAgeMs, tickAheadMs, tickIdOf } from '../schedule/tick.js'
import { storeFromEnvironment } from './default-store.js'
import { LockHeldError } from './errors.js'
import type { InvocationContext } from './handler-context.js'
import { leaseRequest, type RunTiming, runTiming } from './lease-timing.js'
import { LockCache } from './lock-cache.js'
import { EmfMetrics } from './metrics.js'
import { OnHeld, type ResolvedOptions, resolveOptions, type SingletonOptions } from './options.js'
import { Outcome } from './outcome.js'
import { asError, type Report, reporter } from './reporter.js'
import { SingletonRun, tokenOf } from './run.js'
import { lateSkipResult, pausedSkipResult, SkipReason, type SkipResult, skipResult } from './skip.js'

/** How an invocation's start came out: its run, or the answer to give instead of running. */
export type RunStart =
  | { readonly status: 'running'; readonly run: SingletonRun }
  | { readonly status: 'skipped'; readonly result: SkipResult }

/** Which lock an attempt was for, for which tick, and how long it took. */
interface AttemptAt {
  readonly key: string
  readonly tick: string | undefined
  readonly waitMs: number
}

/**
 * How far `acquired_at` (the store's clock, estimated from `Date` headers of 1 s resolution) may
 * be behind the true time: a tick is judged ahead only beyond the clock-skew margin and this.
 */
const ACQUIRED_AT_UNCERTAINTY_MS = 1_000

/**
 * How often a run that may be replaced (`onHeld: 'replace'`) reads its record, so that it stops
 * within this once a newer tick's run took the lock: a read every 5 s (about 0.0005 USD per hour
 * of running at S3's GET price), where a renewal alone would tell only every third of the ttl.
 */
export const REPLACEABLE_WATCH_MS = 5_000
/**
 * INIT's probes of the store's clock begin this long after it (ms), if no invocation has begun:
 * a cold start's own invocation is handed over as INIT ends (a round trip to the Runtime API on
 * the host), one made ahead of its invocations (provisioned concurrency, a start Lambda makes
 * before it is needed) waits longer, and its first token then waits less for the probes.
 */
const PROBES_AFTER_INIT_MS = 50

/**
 * The run lifecycle behind every adapter (`singleton()` for Middy, `withSingleton()` for a plain
 * handler): names the lock and the owner, times the lease for the invocation, acquires (skip,
 * throw or wait), recognises a tick that already ran, and starts the `SingletonRun` that
 * heartbeats, reports and releases. Adapters only translate.
 */
export class SingletonLifecycle<TEvent, TContext extends InvocationContext> {
  readonly #config: ResolvedOptions<TEvent, TContext>
  readonly #where: string
  readonly #clock: Clock
  readonly #report: Report
  readonly #metrics: EmfMetrics
  readonly #locks: LockCache
  /** Runs not ended yet, to find any whose adapter never ended them (see `#sweepAbandoned`). */
  readonly #active = new Set<SingletonRun>()
  #store: Promise<LockStore> | undefined
  /** An invocation began: INIT's probes of the store's clock end (`learnStoreClock`). */
  #invoked = false

  constructor(options: SingletonOptions<TEvent, TContext>, where: string) {
    this.#config = resolveOptions(options, where)
    this.#where = where
    this.#clock = this.#config.clock ?? systemClock
    this.#report = reporter(this.#config.logger, this.#config.onOutcome)
    this.#metrics = new EmfMetrics(this.#config.metrics, () => this.#clock.now())
    this.#locks = new LockCache(() => this.#storeOf(), {
      clockSkewMarginMs: this.#config.clockSkewMarginMs,
      recordRun: this.#config.recordRun,
      clock: this.#clock,
    })
    this.#learnClockAtStart()
  }

  /**
   * Inside Lambda, where a module-scope `singleton()` is made during INIT: builds the store, reads
   * the lock ahead (`Lock.readAhead`: the first invocation then writes at once over a free record,
   * and the read dates the store's clock), then learns that clock in the background (a few
   * probes, `learnStoreClock`), so that the first invocation's token waits a few ms rather than
   * up to a second. The probes end when the first invocation begins: its own requests come
   * first, and a run that never reads its token sends no probe.
   * Never fails the import: the first invocation reports whatever is wrong with the store.
   */
  #learnClockAtStart(): void {
    const functionName = process.env.AWS_LAMBDA_FUNCTION_NAME
    if (!functionName) return
    const { key, keyPrefix } = this.#config
    const named = typeof key !== 'function'
    const name = typeof key === 'string' ? key : process.env[LOCK_ENV.key] || functionName
    const lockKey = `${keyPrefix}${name}`
    const learn = async () => {
      const store = await this.#storeOf()
      // A key made from each event is not known yet: the clock is learnt on the default one. A
      // known key's lock is made now, as the store is, so that the first invocation's time goes
      // to its requests; a store that takes a released lock in one request needs no read ahead:
      // the first invocation's take is its one request.
      if (named) {
        const lock = await this.#locks.lockFor(lockKey)
        if (!store.take) await lock.readAhead()
      }
      // A cold start's own invocation arrives as INIT ends: a probe sent now would be prepared
      // and answered beside its requests, slowing them (on DynamoDB, whose first is the take, the
      // run added 15 ms more). Only an environment made ahead of its invocations probes.
      await new Promise<void>((resolve) => this.#clock.schedule(PROBES_AFTER_INIT_MS, resolve))
      await learnStoreClock(store, lockKey, this.#clock, () => this.#invoked)
    }
    learn().catch(() => undefined)
  }

  /** The store: the one given, or the environment's, built once (again after a failure). */
  #storeOf(): Promise<LockStore> {
    this.#store ??= this.#config.store
      ? Promise.resolve(this.#config.store)
      : storeFromEnvironment(this.#where)
    return this.#store.catch((error: unknown) => {
      this.#store = undefined // the environment may be fixed by the next invocation
      throw error
    })
  }

  /**
   * Acquires for one invocation: a running `SingletonRun`, or why the handler must not run.
   * `signal` abandons the acquisition (a wait for the lock included): it rejects with the
   * signal's reason, reported as nothing (the caller was stopped, nothing failed).
   */
  async begin(event: TEvent, context: TContext, signal?: AbortSignal): Promise<RunStart> {
    this.#invoked = true
    await this.#sweepAbandoned()
    const config = this.#config
    const key = this.#keyOf(event, context)
    const tick = this.#tickOf(event, context, key)
    const late = this.#late(key, tick, context)
    if (late) return late
    const timing = runTiming(config, context, this.#clock)
    const report = this.#reportFor(context)
    this.#locks.use(key)
    const attempting = this.#attempt(key, tick, timing, context, report, signal)
    // A run keeps its key in use until it ends (see `end`); anything else gives it back now.
    void attempting.then(
      ({ attempt }) => attempt.status !== AcquireStatus.Acquired && this.#locks.doneWith(key),
      () => this.#locks.doneWith(key),
    )
    const { attempt, waitMs } = await attempting

    const at = { key, tick, waitMs }
    switch (attempt.status) {
      case AcquireStatus.Skipped:
        return this.#skipped(report, attempt.record, at)
      case AcquireStatus.Held:
        return this.#held(report, { ...at, holder: attempt.holder })
      case AcquireStatus.Acquired:
        return this.#started(report, attempt, timing, at)
    }
  }

  /**
   * The tick `event` is for: what the `tickId` option returns (else the scheduler's time), or
   * none. A `tickId` typed away (an event of type any) may return anything: anything but a
   * string would write a record no reader takes, so it fails the invocation, writing nothing.
   */
  #tickOf(event: TEvent, context: TContext, key: string): string | undefined {
    const { tickId } = this.#config
    if (tickId === false) return undefined
    const tick: unknown = tickId?.(event, context) ?? tickIdOf(event)
    if (tick !== undefined && typeof tick !== 'string') {
      throw new LockOptionsError(`tickId must return a string or undefined, got ${typeof tick}`, { key })
    }
    return tick
  }

  /** The invocation skips: the job is paused, or its tick already completed (`record` as read). */
  #skipped(report: Report, record: LockRecord, { key, tick, waitMs }: AttemptAt): RunStart {
    const { paused } = record
    if (paused) {
      const result = pausedSkipResult(key, record, paused, tick)
      report('info', `skipped: paused by ${result.paused.by} at ${result.paused.at}`, {
        outcome: Outcome.Paused,
        key,
        token: record.token,
        ...(tick && { tick }),
        waitMs,
        paused: result.paused,
      })
      return { status: 'skipped', result }
    }
    report('info', 'skipped: tick already completed', {
      outcome: Outcome.Duplicate,
      key,
      token: record.token,
      ...(tick && { tick }),
      waitMs,
    })
    return { status: 'skipped', result: skipResult(SkipReason.Duplicate, key, record, tick) }
  }

  /** How often a run for `tick` promises to read its record (`running.watch_ms`): only a replaceable run's. */
  #watchMsFor(tick: string | undefined): number | undefined {
    return this.#config.onHeld === OnHeld.Replace && tick !== undefined ? REPLACEABLE_WATCH_MS : undefined
  }

  /** The lock is ours (taken from an older tick's run, if `replaced`): the run starts. */
  #started(
    report: Report,
    { lease, replaced }: Extract<Acquisition, { status: typeof AcquireStatus.Acquired }>,
    timing: RunTiming,
    { key, tick, waitMs }: AttemptAt,
  ): RunStart {
    const config = this.#config
    const ahead = this.#aheadOfStore(tick, lease.record)
    const run = new SingletonRun(lease, {
      key,
      tick,
      // Recorded, a tick that has not come would mark every other host's ticks until then as done.
      recordTick: ahead === undefined,
      timing,
      clock: this.#clock,
      report,
      throwOnLost: config.throwOnLost,
      pauseAfterFailures: config.pauseAfterFailures,
      // It promised to watch when it wrote its tick (running.watch_ms): only then may it be
      // replaced. A taken lease (`LockStore.take`) writes the promise with its raise, at once.
      watchMs: runningWatchMs(lease.record) ?? this.#watchMsFor(tick),
    })
    this.#active.add(run)
    const [level, message] =
      ahead === undefined
        ? (['info', 'lock acquired'] as const)
        : ([
            'warn',
            `lock acquired for a tick ${Math.round(ahead / 1000)} s ahead of the store's clock: this ` +
              "host's clock is fast; the run goes on, but its tick is not recorded as done",
          ] as const)
    report(level, message, {
      outcome: Outcome.Acquired,
      key,
      // A taken lease's is raised in the background: named at "released", not before.
      ...tokenOf(lease),
      owner: lease.owner,
      ...(tick && { tick }),
      waitMs,
      ...(replaced && {
        replaced: { owner: replaced.owner, token: replaced.token, tick: runningTick(replaced) },
      }),
    })
    return { status: 'running', run }
  }

  /**
   * How far `tick` is ahead of the store's clock when it was acquired for, if it has not come
   * yet. Judged by `acquired_at`, which the acquisition wrote from the store's clock: the host's
   * own clock, which the tick may have been taken from, may be the fast one.
   */
  #aheadOfStore(tick: string | undefined, record: LockRecord): number | undefined {
    const acquiredAt = record.acquired_at
    if (tick === undefined || acquiredAt === undefined) return undefined
    const marginMs = this.#config.clockSkewMarginMs + ACQUIRED_AT_UNCERTAINTY_MS
    return tickAheadMs(tick, acquiredAt * 1000, marginMs)
  }

  /**
   * A tick delivered more than `maxTickAgeMs` after its scheduled time is skipped at once: its
   * age is known from the event and the clock, so the store is not asked and nothing is written.
   */
  #late(key: string, tick: string | undefined, context: TContext): RunStart | undefined {
    const limit = this.#config.maxTickAgeMs
    if (limit === undefined || tick === undefined) return undefined
    const age = tickAgeMs(tick, this.#clock.now())
    if (age === undefined || age <= limit) return undefined
    this.#reportFor(context)('warn', 'skipped: tick delivered late', {
      outcome: Outcome.Late,
      key,
      tick,
      tickAgeMs: age,
    })
    return { status: 'skipped', result: lateSkipResult(key, tick, age, limit) }
  }

  /** Tries the lock for one invocation: the attempt, and how long it took (waiting included). */
  async #attempt(
    key: string,
    tick: string | undefined,
    timing: RunTiming,
    context: TContext,
    report: Report,
    signal: AbortSignal | undefined,
  ): Promise<{ attempt: Acquisition; waitMs: number }> {
    // A paused job, or a tick that already ran, is recognised from the record as read: nothing
    // is written for it.
    const skipIf = (record: LockRecord) =>
      record.paused !== undefined || (tick !== undefined && isTickDone(tick, record.last_run))
    // Only a run of a newer tick replaces, and only a holder whose own acquisition named its tick
    // and promised to watch for it: a holder that never looks would run on to its end.
    const replaceable = this.#config.onHeld === OnHeld.Replace
    const watchMs = this.#watchMsFor(tick)
    const replaceIf = replaceable
      ? (holder: LockRecord) => isNewerTick(tick, runningTick(holder)) && runningWatchMs(holder) !== undefined
      : undefined
    try {
      const lock = await this.#locks.lockFor(key)
      const started = this.#clock.now()
      // Frozen or blocked past its own deadline before its turn came: no lease could be of use.
      if (timing.covers === 'invocation' && timing.invocationEnd <= started) throw noTimeLeft(key)
      const attempt = await lock.tryAcquire({
        ...leaseRequest(timing),
        owner: ownerOf(context),
        waitMs: this.#config.waitMs,
        skipIf,
        tick,
        replaceIf,
        ...(watchMs !== undefined && { watchMs }),
        ...(signal && { signal }),
      })
      return { attempt, waitMs: this.#clock.now() - started }
    } catch (error) {
      // Stopped by the caller (a signal to exec while it waits): nothing failed.
      if (signal?.aborted) throw error
      report('error', 'lock could not be acquired', {
        outcome: Outcome.Error,
        key,
        ...(tick && { tick }),
        error: asError(error),
      })
      throw error
    }
  }

  /** Logs and hands on each outcome of this invocation, and writes its metrics when they are on. */
  #reportFor(context: TContext): Report {
    return (level, message, event) => {
      this.#report(level, message, event)
      this.#metrics.record(event, context.functionName || undefined)
    }
  }

  /** Ends a run begun here (see `SingletonRun.end`); `error` is why it failed, when known. */
  async end(run: SingletonRun, succeeded: boolean, error?: unknown): Promise<void> {
    // Once per run: a run swept here is ended again by its adapter when its handler returns.
    const counted = this.#active.delete(run)
    try {
      await run.end(succeeded, error)
    } finally {
      if (counted) this.#locks.doneWith(run.handle.key)
    }
  }

  #held(report: Report, { key, holder, tick, waitMs }: AttemptAt & { holder: LockRecord }): RunStart {
    report('info', 'skipped: lock held by another run', {
      outcome: Outcome.Held,
      key,
      token: holder.token,
      owner: holder.owner,
      ...(tick && { tick }),
      waitMs,
    })
    if (this.#config.onHeld === OnHeld.Fail) {
      throw new LockHeldError(`Lock "${key}" is held by ${holder.owner}`, { key, holder })
    }
    return { status: 'skipped', result: skipResult(SkipReason.Held, key, holder, tick) }
  }

  /**
   * An adapter may fail to end a run: Middy skips a middleware's `after` and `onError` when one
   * used after it ends the request early. In Lambda one invocation runs at a time, so a run whose
   * invocation is over by the clock was abandoned that way: release it now rather than leave it held.
   */
  async #sweepAbandoned(): Promise<void> {
    for (const run of this.#active) {
      if (!run.overdue) continue
      this.#report(
        'warn',
        'released a lease whose invocation ended without after/onError (use singleton() last)',
        {
          outcome: Outcome.Error,
          key: run.handle.key,
          ...tokenOf(run.lease),
        },
      )
      await this.end(run, false).catch(() => undefined)
    }
  }

  #keyOf(event: TEvent, context: TContext): string {
    const { key, keyPrefix } = this.#config
    // The constructs name the key (a construct path outlives the generated function name).
    const name =
      typeof key === 'function'
        ? key(event, context)
        : (key ?? (process.env[LOCK_ENV.key] || context.functionName))
    if (typeof name !== 'string' || name.length === 0) {
      throw new LockOptionsError(
        typeof key === 'function'
          ? `${this.#where}: the key function returned ${JSON.stringify(name)}; it must return a non-empty string`
          : `${this.#where}: no key: pass { key }, set ${LOCK_ENV.key} (the constructs do), or run inside Lambda, where the function name is the default`,
      )
    }
    return `${keyPrefix}${name}`
  }
}

/** An invocation whose deadline passed before it asked for the lock: nothing is asked of the store. */
function noTimeLeft(key: string): LockStoreError {
  return new LockStoreError(
    `Lock "${key}": the invocation's deadline passed before the lock was asked for (the process was ` +
      'frozen or its event loop blocked); nothing was asked of the store',
    { key, retryable: true },
  )
}

/** One owner per invocation: the request id, which a retry of the same invocation keeps. */
function ownerOf(context: InvocationContext): string {
  return context.functionName && context.awsRequestId
    ? `${context.functionName}/${context.awsRequestId}`
    : `${context.functionName || 'local'}/${randomUUID()}`
}
