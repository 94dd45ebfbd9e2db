/**
 * `lambda-singleton exec`: the lock around any command, for jobs that outgrow Lambda (an ECS or
 * Fargate task, a Kubernetes CronJob, cron on several hosts). A third thin adapter over the run
 * lifecycle that `singleton()` and `withSingleton()` use: the lifecycle names the owner, acquires
 * (waiting, skipping a tick that completed), heartbeats, reports and releases; lib/exec runs the
 * command (the command and all it starts), passes signals on to it, and stops it when the lease
 * is lost. This file gives lib/exec the real world: processes, timers, the process's signals.
 */
import { randomUUID } from 'node:crypto'
import { type Clock, systemClock } from '../core/clock.js'
import type { LockStore } from '../core/store.js'
import type { StartCommand } from '../exec/command-group.js'
import { locateProgram } from '../exec/locate.js'
import { logLine } from '../exec/log-line.js'
import { ProcessGroup, type Shortfall } from '../exec/process-group.js'
import { type SignalSource, supervise } from '../exec/supervise.js'
import type { InvocationContext } from '../lifecycle/handler-context.js'
import { SingletonLifecycle } from '../lifecycle/lifecycle.js'
import type { SingletonLogger } from '../lifecycle/logger.js'
import { OnHeld } from '../lifecycle/options.js'
import type { SingletonRun } from '../lifecycle/run.js'
import { SkipReason, type SkipResult } from '../lifecycle/skip.js'
import { ExecMessage, LogField, LogLevel } from '../log-contract.js'
import type { CommandLine } from './args.js'
import type { CommandContext } from './commands.js'
import { type ExecLine, ExecOnHeld } from './exec-args.js'
import { ExitCode } from './exit-codes.js'

/** Signals passed on to the command: a container stop (SIGTERM), Ctrl-C, a closed terminal. */
const FORWARDED = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const

let forwarding = 0

/** The process's signals, counted while subscribed: main.ts leaves them alone meanwhile. */
export const processSignals: SignalSource = {
  subscribe(listener) {
    const pass = (signal: NodeJS.Signals) => listener(signal)
    forwarding++
    for (const signal of FORWARDED) process.on(signal, pass)
    return () => {
      for (const signal of FORWARDED) process.off(signal, pass)
      forwarding--
    }
  },
}

/**
 * Whether a command is running under `exec`, which then passes the process's SIGINT and SIGTERM
 * on to it: main.ts leaves them alone meanwhile (no abort, no exit on the second one), so that
 * the wrapper outlives its command and releases the lock after it.
 */
export function forwardsSignals(): boolean {
  return forwarding > 0
}

/** What `exec` needs of a command's context: a `CommandContext` is one. */
export interface ExecContext extends Pick<CommandContext, 'operator' | 'err' | 'signal'> {
  readonly line: Pick<CommandLine, 'key' | 'exec'>
  readonly opened: { readonly store: LockStore }
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

const REAL_WORLD: ExecWorld = {
  clock: systemClock,
  signals: processSignals,
  start: startWarning,
  runId: () => `${process.pid}-${randomUUID().slice(0, 8)}`,
  locate: (program) => locateProgram(program),
}

export async function exec(context: ExecContext, world: ExecWorld = REAL_WORLD): Promise<ExitCode> {
  const { line } = context
  const settings = line.exec
  if (!settings || line.key === undefined) throw new Error('exec: parsed without its command or key')
  // A command that cannot start is reported before the lock is taken: no run, no failure counted.
  const [program] = settings.argv
  const unstartable = await world.locate(program)
  if (unstartable) {
    const exitCode = unstartable.code === 'ENOENT' ? ExitCode.CommandNotFound : ExitCode.CannotRun
    // `error.exitCode`, as exec's other failures (`--json`) carry it: the task counts it as failed.
    context.err(
      logLine(LogLevel.Error, `cannot run ${program}: ${unstartable.message}; the lock was not taken`, {
        [LogField.key]: line.key,
        code: unstartable.code,
        [LogField.error]: { [LogField.exitCode]: exitCode },
      }),
    )
    return exitCode
  }
  const lifecycle = new SingletonLifecycle<undefined, InvocationContext>(
    {
      store: context.opened.store,
      keyPrefix: '', // --key is the whole key, as for the other commands
      key: line.key,
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
  // One owner per wrapper process: the operator (--owner, or user@host), then pid and a nonce.
  const invocation = {
    functionName: context.operator,
    awsRequestId: world.runId(),
  }
  let start: Awaited<ReturnType<typeof lifecycle.begin>>
  try {
    start = await lifecycle.begin(undefined, invocation, context.signal)
  } catch (error) {
    if (!context.signal?.aborted) throw error
    // Stopped while it waited for the lock: nothing was taken, nothing ran, nothing is recorded.
    context.err(
      logLine(LogLevel.Warn, 'interrupted while waiting for the lock; the command never started', {
        key: line.key,
      }),
    )
    return ExitCode.Interrupted
  }
  if (start.status === 'skipped') return skipCode(start.result, settings)
  const { run } = start
  const { handle } = run
  // The command finds its token in its environment: it starts once the token is safe to use. A
  // wait for it (a process's first lease) is long enough for an operator or a newer tick to end
  // the lease unseen: then one read says whether it is still ours, before anything starts.
  const waitFrom = world.clock.now()
  const token = await handle
    .fencingToken(context.signal ? { signal: context.signal } : {})
    .then(async (ready) => {
      if (world.clock.now() - waitFrom >= 1) await run.lease.checkCurrent()
      return ready
    })
    .catch(() => undefined)
  // No await between this look and supervise's taking over the signals: none can slip between.
  if (context.signal?.aborted) return giveBackUnrun(lifecycle, run, context.err)
  if (token === undefined) {
    // Lost while its token was awaited (the run's report said why): the command never started.
    await lifecycle.end(run, false)
    return ExitCode.Lost
  }
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
  const ended = await supervise(supervised, settings, {
    start: world.start(err),
    signals: world.signals,
    clock: world.clock,
    err,
  })
  const fields = { [LogField.key]: line.key, token, [LogField.status]: ended.status, lost: ended.lost }
  const level = ended.status === 0 && !ended.lost ? LogLevel.Info : LogLevel.Error
  context.err(logLine(level, ExecMessage.CommandExited, fields))
  await lifecycle.end(run, ended.status === 0 && !ended.lost)
  // A takeover between two renewals is found by the release: the run overlapped another all the same.
  const lost = ended.lost || run.lease.isLost
  // The command's own status passes through: any number 0-255, not only the CLI's own codes.
  return lost ? ExitCode.Lost : (ended.status as ExitCode)
}

/**
 * Stopped while acquiring (SIGINT, SIGTERM): the lock is given back with no run recorded. The
 * command never started, so nothing failed, and a failed run would count towards
 * `--pause-after-failures` and could pause the job.
 */
async function giveBackUnrun(
  lifecycle: SingletonLifecycle<undefined, InvocationContext>,
  run: SingletonRun,
  err: (text: string) => void,
): Promise<ExitCode> {
  const { handle } = run
  const fields = { key: handle.key, token: run.lease.record.token }
  try {
    await run.lease.release()
  } catch (error) {
    // Lost meanwhile (the lease's signal reports it), or the store failed: it expires by itself.
    err(
      logLine(LogLevel.Warn, 'interrupted before the command started; the lock could not be given back', {
        ...fields,
        error,
      }),
    )
    return ExitCode.Interrupted
  }
  // Released already: ending the run stops its heartbeat and writes nothing more.
  await lifecycle.end(run, false)
  err(
    logLine(LogLevel.Warn, 'interrupted before the command started; the lock was given back unused', fields),
  )
  return ExitCode.Interrupted
}

/**
 * A tick that completed, a tick too old to run and a paused job are not to run: exit 0 whatever
 * `--on-held` says, as the middleware answers them (a scheduler must not retry them). A held
 * lock: `Held` to fail (or after a wait that ran out); otherwise exit 0 to skip, the holder doing
 * the work (`replace` skips too when its tick is not newer).
 */
function skipCode(result: SkipResult, settings: ExecLine): ExitCode {
  if (result.reason !== SkipReason.Held) return ExitCode.Ok
  return settings.onHeld === ExecOnHeld.Fail || settings.onHeld === ExecOnHeld.Wait
    ? ExitCode.Held
    : ExitCode.Ok
}

/** Starts the real process group, saying what the platform cannot promise about it. */
function startWarning(err: (text: string) => void) {
  return (argv: readonly [string, ...string[]], env: NodeJS.ProcessEnv): ProcessGroup => {
    const group = new ProcessGroup(argv, env)
    warnShortfall(group.shortfall, err)
    return group
  }
}

let warned = false

/** Says once per process what cannot be promised here about a wrapper killed with SIGKILL. */
function warnShortfall(shortfall: Shortfall, err: (text: string) => void): void {
  if (warned || !(shortfall.setpriv || shortfall.shell)) return
  warned = true
  const message = shortfall.shell
    ? 'no /bin/sh for the watchdog: if this wrapper is killed with SIGKILL, the processes its command started run on'
    : 'no setpriv (util-linux): if this wrapper is killed with SIGKILL in the instant its command starts, the command may run on'
  err(logLine(LogLevel.Warn, message, { setpriv: !shortfall.setpriv, watchdog: !shortfall.shell }))
}

/** The lifecycle's one line per outcome, as JSON on stderr: stdout is the command's. */
function stderrLogger(err: (text: string) => void): SingletonLogger {
  return {
    info: (message, fields) => err(logLine(LogLevel.Info, message, fields)),
    warn: (message, fields) => err(logLine(LogLevel.Warn, message, fields)),
    error: (message, fields) => err(logLine(LogLevel.Error, message, fields)),
  }
}
