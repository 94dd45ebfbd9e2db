/**
 * `exec`, the third adapter over the run lifecycle beside `singleton()` and `withSingleton()`:
 * the lock around any command, for jobs that outgrow Lambda (an ECS or Fargate task, a
 * Kubernetes CronJob, cron on several hosts). The lifecycle names the owner, acquires (waiting,
 * skipping a tick that completed), heartbeats, reports and releases; supervise.ts runs the
 * command (the command and all it starts), passes signals on to it, and stops it when the lease
 * is lost. The world it runs in comes as a parameter: the real one (`realWorld`), or the
 * simulator's (test/sim). The CLI only parses its line into `ExecSettings` (lib/cli/exec.ts).
 */
import { randomUUID } from 'node:crypto'
import { type Clock, systemClock } from '../core/clock.js'
import { LockLostError } from '../core/errors.js'
import type { LockStore } from '../core/store.js'
import { ExitCode } from '../exit-codes.js'
import type { InvocationContext } from '../lifecycle/handler-context.js'
import { SingletonLifecycle } from '../lifecycle/lifecycle.js'
import type { SingletonLogger } from '../lifecycle/logger.js'
import { OnHeld } from '../lifecycle/options.js'
import { type SingletonRun, tokenOf } from '../lifecycle/run.js'
import { SkipReason, type SkipResult } from '../lifecycle/skip.js'
import { ExecMessage, LogField, LogLevel, logLine } from '../log-contract.js'
import type { StartCommand } from './command-group.js'
import { locateProgram } from './locate.js'
import { ProcessGroup, type Shortfall } from './process-group.js'
import { ExecOnHeld, type ExecSettings } from './settings.js'
import { type SignalSource, supervise } from './supervise.js'

/** One `exec`: the command and its settings, the lock, and who runs it. */
export interface ExecContext {
  readonly settings: ExecSettings
  /** The whole lock key (no prefix is added). */
  readonly key: string
  readonly store: LockStore
  /** Who runs it (the operator: `--owner`, or user@host), for the owner the record names. */
  readonly operator: string
  /** Where exec's JSON lines go (stderr: stdout is the command's). */
  readonly err: (text: string) => void
  /** Stops a wait for the lock, and a command not started yet (SIGINT, SIGTERM before it runs). */
  readonly signal?: AbortSignal | undefined
}

/** The world `exec` runs in: real processes, clock and signals, or the simulator's (test/sim). */
export interface ExecWorld {
  readonly clock: Clock
  readonly signals: SignalSource
  /** Starts the command as a group of its own; `err` takes what the start has to say. */
  readonly start: (err: (text: string) => void) => StartCommand
  /** Tells this wrapper's runs apart in the owner (the pid and a nonce). */
  readonly runId: () => string
  /** Why the program cannot be started (`locateProgram`), asked before the lock is. */
  readonly locate: (program: string) => Promise<NodeJS.ErrnoException | undefined>
}

/** The real world: processes, the system clock, and the process's signals (`signals`). */
export function realWorld(signals: SignalSource): ExecWorld {
  // Said once per wrapper: what the platform cannot promise about a wrapper killed with SIGKILL.
  let warned = false
  return {
    clock: systemClock,
    signals,
    start: (err) => (argv, env) =>
      new ProcessGroup(argv, env, (shortfall) => {
        if (!warned) warned = warnShortfall(shortfall, err)
      }),
    runId: () => `${process.pid}-${randomUUID().slice(0, 8)}`,
    locate: (program) => locateProgram(program),
  }
}

/**
 * Runs the command under the lock; resolves the exit code: the command's own status, or one of
 * `ExitCode`'s when it did not run (held, lost, not found, interrupted).
 */
export async function exec(context: ExecContext, world: ExecWorld): Promise<ExitCode> {
  // A command that cannot start is reported before the lock is taken: no run, no failure counted.
  const unstartable = await refuseUnstartable(context, world)
  if (unstartable !== undefined) return unstartable
  const lifecycle = lifecycleFor(context, world)
  // One owner per wrapper process: the operator (--owner, or user@host), then pid and a nonce.
  const invocation = { functionName: context.operator, awsRequestId: world.runId() }
  let start: Awaited<ReturnType<typeof lifecycle.begin>>
  try {
    start = await lifecycle.begin(undefined, invocation, context.signal)
  } catch (error) {
    if (!context.signal?.aborted) throw error
    // Stopped while it waited for the lock: nothing was taken, nothing ran, nothing is recorded.
    context.err(
      logLine(LogLevel.Warn, 'interrupted while waiting for the lock; the command never started', {
        key: context.key,
      }),
    )
    return ExitCode.Interrupted
  }
  if (start.status === 'skipped') return skipCode(start.result, context.settings)
  const { run } = start
  const token = await tokenBeforeStart(run, context, world)
  // No await between this look and supervise's taking over the signals: none can slip between.
  if (context.signal?.aborted) return giveBackUnrun(lifecycle, run, context.err, INTERRUPTED)
  if (token.kind === 'lost') {
    // Lost while its token was awaited (the run's report said why): the command never started.
    await lifecycle.end(run, false)
    return ExitCode.Lost
  }
  // The store failed us, the lease is not known lost: nothing ran, so nothing failed either.
  if (token.kind === 'failed') return giveBackUnrun(lifecycle, run, context.err, storeFailed(token.error))
  return superviseRun(lifecycle, run, token.token, context, world)
}

/** The exit code for a program that cannot be started (said on stderr), or undefined when it can. */
async function refuseUnstartable(context: ExecContext, world: ExecWorld): Promise<ExitCode | undefined> {
  const [program] = context.settings.argv
  const unstartable = await world.locate(program)
  if (!unstartable) return undefined
  const exitCode = unstartable.code === 'ENOENT' ? ExitCode.CommandNotFound : ExitCode.CannotRun
  // `error.exitCode`, as exec's other failures (`--json`) carry it: the task counts it as failed.
  context.err(
    logLine(LogLevel.Error, `cannot run ${program}: ${unstartable.message}; the lock was not taken`, {
      [LogField.key]: context.key,
      code: unstartable.code,
      [LogField.error]: { [LogField.exitCode]: exitCode },
    }),
  )
  return exitCode
}

/** The run lifecycle exec's settings ask for: the one the Middy and plain adapters use. */
function lifecycleFor(
  context: ExecContext,
  world: ExecWorld,
): SingletonLifecycle<undefined, InvocationContext> {
  const { settings } = context
  return new SingletonLifecycle<undefined, InvocationContext>(
    {
      store: context.store,
      keyPrefix: '', // --key is the whole key, as for the other commands
      key: context.key,
      // Skip or replace; the exit code says the rest (see skipCode).
      onHeld: settings.onHeld === ExecOnHeld.Replace ? OnHeld.Replace : OnHeld.Skip,
      waitMs: settings.waitMs,
      ttlMs: settings.ttlMs,
      tickId: settings.tick === undefined ? false : () => settings.tick,
      maxTickAgeMs: settings.maxTickAgeMs,
      pauseAfterFailures: settings.pauseAfterFailures,
      logger: stderrLogger(context.err),
      metrics: false,
      clock: world.clock,
    },
    'lambda-singleton exec',
  )
}

/** The token the command is to start with, or why it is not to start. */
type TokenBeforeStart =
  | { readonly kind: 'ready'; readonly token: number }
  /** The lease is known lost: taken over, ended by an operator, deleted or run out. */
  | { readonly kind: 'lost' }
  /** Anything else (a read the store failed): whether the lease is still ours is not known. */
  | { readonly kind: 'failed'; readonly error: unknown }

/**
 * The token the command finds in its environment, once it is safe to use. A wait for it (a
 * process's first lease) is long enough for an operator or a newer tick to end the lease unseen:
 * then one read says whether it is still ours. Only a loss is a loss: a read that fails says
 * nothing of the lease, and reporting it as lost would record a failed run that never ran.
 */
async function tokenBeforeStart(
  run: SingletonRun,
  context: ExecContext,
  world: ExecWorld,
): Promise<TokenBeforeStart> {
  const waitFrom = world.clock.now()
  try {
    const token = await run.handle.fencingToken(context.signal ? { signal: context.signal } : {})
    if (world.clock.now() - waitFrom >= 1) await run.lease.checkCurrent()
    return { kind: 'ready', token }
  } catch (error) {
    if (error instanceof LockLostError || run.lease.isLost) return { kind: 'lost' }
    return { kind: 'failed', error }
  }
}

/** Runs the command under the held lease, ends the run, and says how it went (the exit code). */
async function superviseRun(
  lifecycle: SingletonLifecycle<undefined, InvocationContext>,
  run: SingletonRun,
  token: number,
  context: ExecContext,
  world: ExecWorld,
): Promise<ExitCode> {
  const { handle } = run
  const { err } = context
  const supervised = {
    key: handle.key,
    token,
    get expiresAt() {
      return handle.expiresAt
    },
    signal: handle.signal,
    lease: run.lease,
  }
  const ended = await supervise(supervised, context.settings, {
    start: world.start(err),
    signals: world.signals,
    clock: world.clock,
    err,
  })
  const fields = { [LogField.key]: context.key, token, [LogField.status]: ended.status, lost: ended.lost }
  const level = ended.status === 0 && !ended.lost ? LogLevel.Info : LogLevel.Error
  err(logLine(level, ExecMessage.CommandExited, fields))
  await lifecycle.end(run, ended.status === 0 && !ended.lost)
  // A takeover between two renewals is found by the release: the run overlapped another all the same.
  const lost = ended.lost || run.lease.isLost
  // The command's own status passes through: any number 0-255, not only the CLI's own codes.
  return lost ? ExitCode.Lost : (ended.status as ExitCode)
}

/** Why a run gives its lock back before its command starts, and what exec then ends with. */
interface Unrun {
  readonly exitCode: ExitCode
  readonly level: LogLevel
  /** What happened, before "; the lock was given back unused" or "could not be given back". */
  readonly what: string
  /** The failure behind it, reported with the exit code (`error.exitCode`, as exec's others). */
  readonly error?: unknown
}

const INTERRUPTED: Unrun = {
  exitCode: ExitCode.Interrupted,
  level: LogLevel.Warn,
  what: 'interrupted before the command started',
}

function storeFailed(error: unknown): Unrun {
  return {
    exitCode: ExitCode.Failure,
    level: LogLevel.Error,
    what: 'the store failed before the command started',
    error,
  }
}

/**
 * Stopped before the command started (SIGINT, SIGTERM, SIGHUP, or a store failure while the
 * lease was checked): the lock is given back with no run recorded. The command never started,
 * so nothing failed, and a failed run would count towards `--pause-after-failures` and could
 * pause the job.
 */
async function giveBackUnrun(
  lifecycle: SingletonLifecycle<undefined, InvocationContext>,
  run: SingletonRun,
  err: (text: string) => void,
  why: Unrun,
): Promise<ExitCode> {
  const { handle } = run
  const fields = {
    [LogField.key]: handle.key,
    ...tokenOf(run.lease),
    ...(why.error !== undefined && { [LogField.error]: failure(why.error, why.exitCode) }),
  }
  try {
    await run.lease.release()
  } catch (error) {
    // Lost meanwhile (the lease's signal reports it), or the store failed: it expires by itself.
    err(
      logLine(why.level, `${why.what}; the lock could not be given back, and frees when its lease ends`, {
        ...fields,
        releaseError: error,
      }),
    )
    return why.exitCode
  }
  // Released already: ending the run stops its heartbeat and writes nothing more.
  await lifecycle.end(run, false)
  err(logLine(why.level, `${why.what}; the lock was given back unused`, fields))
  return why.exitCode
}

/** An error as exec's lines carry it: what it was, and the exit code it ends exec with. */
function failure(error: unknown, exitCode: ExitCode): Record<string, unknown> {
  const described =
    error instanceof Error ? { name: error.name, message: error.message } : { message: String(error) }
  return { ...described, [LogField.exitCode]: exitCode }
}

/**
 * A tick that completed, a tick too old to run and a paused job are not to run: exit 0 whatever
 * `--on-held` says, as the middleware answers them (a scheduler must not retry them). A held
 * lock: `Held` to fail (after `--wait`, when given); otherwise exit 0 to skip, the holder doing
 * the work (`replace` skips too when its tick is not newer).
 */
function skipCode(result: SkipResult, settings: ExecSettings): ExitCode {
  if (result.reason !== SkipReason.Held) return ExitCode.Ok
  return settings.onHeld === ExecOnHeld.Fail ? ExitCode.Held : ExitCode.Ok
}

/** Says what cannot be promised here about a wrapper killed with SIGKILL; whether it said anything. */
function warnShortfall(shortfall: Shortfall, err: (text: string) => void): boolean {
  if (!(shortfall.setpriv || shortfall.shell)) return false
  const message = shortfall.shell
    ? 'no /bin/sh for the watchdog: if this wrapper is killed with SIGKILL, the processes its command started run on'
    : 'no setpriv (util-linux): if this wrapper is killed with SIGKILL in the instant its command starts, the command may run on'
  err(logLine(LogLevel.Warn, message, { setpriv: !shortfall.setpriv, watchdog: !shortfall.shell }))
  return true
}

/** The lifecycle's one line per outcome, as JSON on stderr: stdout is the command's. */
function stderrLogger(err: (text: string) => void): SingletonLogger {
  return {
    info: (message, fields) => err(logLine(LogLevel.Info, message, fields)),
    warn: (message, fields) => err(logLine(LogLevel.Warn, message, fields)),
    error: (message, fields) => err(logLine(LogLevel.Error, message, fields)),
  }
}
