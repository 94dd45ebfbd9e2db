import { randomUUID } from 'node:crypto'
import { type Clock, systemClock } from '../core/clock.js'
import { LockOptionsError } from '../core/errors.js'
import { AcquireStatus, Lock } from '../core/lock.js'
import type { LockRecord } from '../core/record.js'
import type { LockStore } from '../core/store.js'
import type { InvocationContext } from './context.js'
import { storeFromEnvironment } from './default-store.js'
import { LockHeldError } from './errors.js'
import { leaseRequest, runTiming } from './lease-timing.js'
import { OnHeld, type ResolvedOptions, resolveOptions, type SingletonOptions } from './options.js'
import { Outcome } from './outcome.js'
import { asError, type Report, reporter } from './reporter.js'
import { SingletonRun } from './run.js'
import { SkipReason, type SkipResult, skipResult } from './skip.js'
import { isTickDone, tickIdOf } from './tick.js'

/** How an invocation's start came out: its run, or the answer to give instead of running. */
export type RunStart =
  | { readonly status: 'running'; readonly run: SingletonRun }
  | { readonly status: 'skipped'; readonly result: SkipResult }

/** Locks kept per lifecycle (per key), so warm invocations re-acquire with one request. */
const MAX_CACHED_LOCKS = 256

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
  readonly #locks = new Map<string, Lock>()
  /** Runs not ended yet, to find any whose adapter never ended them (see `#sweepAbandoned`). */
  readonly #active = new Set<SingletonRun>()
  #store: Promise<LockStore> | undefined

  constructor(options: SingletonOptions<TEvent, TContext>, where: string) {
    this.#config = resolveOptions(options, where)
    this.#where = where
    this.#clock = this.#config.clock ?? systemClock
    this.#report = reporter(this.#config.logger, this.#config.onOutcome)
  }

  /** Acquires for one invocation: a running `SingletonRun`, or why the handler must not run. */
  async begin(event: TEvent, context: TContext): Promise<RunStart> {
    await this.#sweepAbandoned()
    const config = this.#config
    const key = this.#keyOf(event, context)
    const tick = config.tickId === false ? undefined : (config.tickId?.(event, context) ?? tickIdOf(event))
    const timing = runTiming(config, context, this.#clock)
    // A tick that already ran is recognised from the record as read: nothing is written for it.
    const done = tick === undefined ? undefined : (record: LockRecord) => isTickDone(tick, record.last_run)

    let attempt: Awaited<ReturnType<Lock['attempt']>>
    try {
      const lock = await this.#lockFor(key)
      attempt = await lock.attempt({
        ...leaseRequest(timing),
        owner: ownerOf(context),
        waitMs: config.waitMs,
        ...(done && { skipIf: done }),
      })
    } catch (error) {
      this.#report('error', 'lock could not be acquired', {
        outcome: Outcome.Error,
        key,
        ...(tick && { tick }),
        error: asError(error),
      })
      throw error
    }

    switch (attempt.status) {
      case AcquireStatus.Skipped:
        this.#report('info', 'skipped: tick already completed', {
          outcome: Outcome.Duplicate,
          key,
          token: attempt.record.token,
          ...(tick && { tick }),
        })
        return { status: 'skipped', result: skipResult(SkipReason.Duplicate, key, attempt.record, tick) }
      case AcquireStatus.Held:
        return this.#held(key, attempt.holder, tick)
      case AcquireStatus.Acquired: {
        const { lease } = attempt
        const run = new SingletonRun(lease, {
          key,
          tick,
          timing,
          clock: this.#clock,
          report: this.#report,
          throwOnLost: config.throwOnLost,
        })
        this.#active.add(run)
        this.#report('info', 'lock acquired', {
          outcome: Outcome.Acquired,
          key,
          token: lease.token,
          owner: lease.owner,
          ...(tick && { tick }),
        })
        return { status: 'running', run }
      }
    }
  }

  /** Ends a run begun here (see `SingletonRun.end`). */
  end(run: SingletonRun, succeeded: boolean): Promise<void> {
    this.#active.delete(run)
    return run.end(succeeded)
  }

  #held(key: string, holder: LockRecord | undefined, tick: string | undefined): RunStart {
    this.#report('info', 'skipped: lock held by another run', {
      outcome: Outcome.Skipped,
      key,
      ...(holder && { token: holder.token, owner: holder.owner }),
      ...(tick && { tick }),
    })
    if (this.#config.onHeld === OnHeld.Throw) {
      throw new LockHeldError(`Lock "${key}" is held by ${holder?.owner ?? 'another run'}`, {
        key,
        ...(holder && { holder }),
      })
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
          key: run.state.key,
          token: run.state.token,
        },
      )
      await this.end(run, false).catch(() => undefined)
    }
  }

  async #lockFor(key: string): Promise<Lock> {
    let lock = this.#locks.get(key)
    if (!lock) {
      this.#store ??= this.#config.store
        ? Promise.resolve(this.#config.store)
        : storeFromEnvironment(this.#where)
      const store = await this.#store.catch((error: unknown) => {
        this.#store = undefined // the environment may be fixed by the next invocation
        throw error
      })
      if (this.#locks.size >= MAX_CACHED_LOCKS) this.#locks.delete(this.#locks.keys().next().value as string)
      lock = new Lock({
        store,
        key,
        clockSkewMarginMs: this.#config.clockSkewMarginMs,
        clock: this.#clock,
      })
      this.#locks.set(key, lock)
    }
    return lock
  }

  #keyOf(event: TEvent, context: TContext): string {
    const { key, keyPrefix } = this.#config
    const name = typeof key === 'function' ? key(event, context) : (key ?? context.functionName)
    if (typeof name !== 'string' || name.length === 0) {
      throw new LockOptionsError(
        typeof key === 'function'
          ? `${this.#where}: the key function returned ${JSON.stringify(name)}; it must return a non-empty string`
          : `${this.#where}: no key: pass { key } or run inside Lambda, where the function name is the default`,
      )
    }
    return `${keyPrefix}${name}`
  }
}

/** One owner per invocation: the request id, which a retry of the same invocation keeps. */
function ownerOf(context: InvocationContext): string {
  return context.functionName && context.awsRequestId
    ? `${context.functionName}/${context.awsRequestId}`
    : `${context.functionName || 'local'}/${randomUUID()}`
}
