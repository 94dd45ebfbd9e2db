/**
 * `lambda-singleton exec`: the lock around any command, for jobs that outgrow Lambda (an ECS or
 * Fargate task, a Kubernetes CronJob, cron on several hosts). A third thin adapter over the run
 * lifecycle that `singleton()` and `withSingleton()` use: the lifecycle names the owner, acquires
 * (waiting, skipping a tick that completed), heartbeats, reports and releases; this file only
 * runs the command (process-group.ts: the command and all it starts), passes signals on to it,
 * and stops it when the lease is lost.
 */
import { randomUUID } from 'node:crypto'
import { LockLostError, LostReason } from '../core/errors.js'
import type { InvocationContext } from '../lifecycle/handler-context.js'
import { SingletonLifecycle } from '../lifecycle/lifecycle.js'
import type { SingletonLogger } from '../lifecycle/logger.js'
import { OnHeld } from '../lifecycle/options.js'
import type { SingletonRun } from '../lifecycle/run.js'
import { SkipReason, type SkipResult } from '../lifecycle/skip.js'
import type { CommandContext } from './commands.js'
import { type ExecLine, ExecOnHeld } from './exec-args.js'
import { ExitCode } from './exit-codes.js'
import { ProcessGroup, type Shortfall } from './process-group.js'

/** What the command finds in its environment, besides everything the wrapper had. */
export const EXEC_ENV = {
  token: 'LAMBDA_SINGLETON_TOKEN',
  key: 'LAMBDA_SINGLETON_KEY',
  owner: 'LAMBDA_SINGLETON_OWNER',
  /** The lease's end when the command started (ISO 8601); the wrapper renews it while it runs. */
  expiresAt: 'LAMBDA_SINGLETON_EXPIRES_AT',
  /** The `--tick`, when given. */
  tick: 'LAMBDA_SINGLETON_TICK',
} as const

/** Signals passed on to the command: a container stop (SIGTERM), Ctrl-C, a closed terminal. */
const FORWARDED = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const

let forwarding = 0

const DELIBERATE_LOSS: Readonly<Record<string, string>> = {
  [LostReason.Replaced]: 'replaced by a run of a newer tick',
  [LostReason.ReleasedByOperator]: 'released by an operator',
}

/**
 * Whether a command is running under `exec`, which then passes the process's SIGINT and SIGTERM
 * on to it: main.ts leaves them alone meanwhile (no abort, no exit on the second one), so that
 * the wrapper outlives its command and releases the lock after it.
 */
export function forwardsSignals(): boolean {
  return forwarding > 0
}

/** How the command ended: its exit status, and whether the lease was lost meanwhile. */
interface Ended {
  readonly status: number
  readonly lost: boolean
}

export async function exec(context: CommandContext): Promise<ExitCode> {
  const { line } = context
  const settings = line.exec
  if (!settings || line.key === undefined) throw new Error('exec: parsed without its command or key')
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
    },
    'lambda-singleton exec',
  )
  // One owner per wrapper process: the operator (--owner, or user@host), then pid and a nonce.
  const invocation = {
    functionName: context.operator,
    awsRequestId: `${process.pid}-${randomUUID().slice(0, 8)}`,
  }
  let start: Awaited<ReturnType<typeof lifecycle.begin>>
  try {
    start = await lifecycle.begin(undefined, invocation, context.signal)
  } catch (error) {
    if (!context.signal?.aborted) throw error
    // Stopped while it waited for the lock: nothing was taken, nothing ran, nothing is recorded.
    context.err(
      logLine('WARN', 'interrupted while waiting for the lock; the command never started', { key: line.key }),
    )
    return ExitCode.Interrupted
  }
  if (start.status === 'skipped') return skipCode(start.result, settings)
  const { run } = start
  // No await between this look and supervise's taking over the signals: none can slip between.
  if (context.signal?.aborted) return giveBackUnrun(lifecycle, run, context.err)
  const ended = await supervise(run, settings, context.err)
  const fields = { key: line.key, token: run.handle.token, status: ended.status, lost: ended.lost }
  context.err(logLine(ended.status === 0 && !ended.lost ? 'INFO' : 'ERROR', 'command exited', fields))
  await lifecycle.end(run, ended.status === 0 && !ended.lost)
  // A takeover between two renewals is found by the release: the run overlapped another all the same.
  const lost = ended.lost || run.handle.lease.isLost
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
  const fields = { key: handle.key, token: handle.token }
  try {
    await handle.lease.release()
  } catch (error) {
    // Lost meanwhile (the lease's signal reports it), or the store failed: it expires by itself.
    err(
      logLine('WARN', 'interrupted before the command started; the lock could not be given back', {
        ...fields,
        error,
      }),
    )
    return ExitCode.Interrupted
  }
  // Released already: ending the run stops its heartbeat and writes nothing more.
  await lifecycle.end(run, false)
  err(logLine('WARN', 'interrupted before the command started; the lock was given back unused', fields))
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

/**
 * Runs the command, in a process group of its own, with the lease in its environment, until no
 * process of the group runs. Passes the process's signals on to the group; when the lease is
 * lost, sends it SIGTERM. However the group is asked to stop, it gets SIGKILL `killAfterMs` later
 * if any of it still runs.
 */
async function supervise(run: SingletonRun, settings: ExecLine, err: (text: string) => void): Promise<Ended> {
  const { handle } = run
  const group = new ProcessGroup(settings.argv, commandEnv(run, settings.tick))
  warnShortfall(group.shortfall, err)
  let lost = false
  let killTimer: NodeJS.Timeout | undefined
  const stop = (signal: NodeJS.Signals) => {
    group.signal(signal)
    killTimer ??= setTimeout(() => group.signal('SIGKILL'), settings.killAfterMs)
  }
  const onLost = () => {
    lost = true
    const { reason } = handle.signal
    const why = reason instanceof LockLostError ? reason.reason : undefined
    // A newer tick's replacement and an operator's takeover are done on purpose: warnings.
    const what = DELIBERATE_LOSS[why ?? ''] ?? 'lost'
    err(
      logLine(what === 'lost' ? 'ERROR' : 'WARN', `stopping the command: the lease was ${what}`, {
        key: handle.key,
        token: handle.token,
        pid: group.pid,
        killAfterMs: settings.killAfterMs,
      }),
    )
    stop('SIGTERM')
  }
  forwarding++
  for (const signal of FORWARDED) process.on(signal, stop)
  if (handle.signal.aborted) onLost()
  else handle.signal.addEventListener('abort', onLost, { once: true })
  try {
    return { status: await outlive(group, settings.argv[0], handle.key, err), lost }
  } finally {
    clearTimeout(killTimer)
    group.close()
    handle.signal.removeEventListener('abort', onLost)
    for (const signal of FORWARDED) process.off(signal, stop)
    forwarding--
  }
}

/**
 * The command's status, once no process of its group runs: what the command started and left
 * behind is the job too, and keeps the lock, as a `flock(1)` command's children keep theirs.
 */
async function outlive(
  group: ProcessGroup,
  program: string,
  key: string,
  err: (text: string) => void,
): Promise<number> {
  const ended = await group.leaderExit
  if (ended.kind === 'not-started') {
    const { error } = ended
    err(logLine('ERROR', `cannot run ${program}: ${error.message}`, { key, code: error.code }))
    return error.code === 'ENOENT' ? ExitCode.CommandNotFound : ExitCode.CannotRun
  }
  if (group.running) {
    err(
      logLine('INFO', 'command exited; processes it started still run, and keep the lock until they end', {
        key,
        status: ended.status,
        pgid: group.pid,
      }),
    )
    await group.gone()
  }
  return ended.status
}

let warned = false

/** Says once per process what cannot be promised here about a wrapper killed with SIGKILL. */
function warnShortfall(shortfall: Shortfall, err: (text: string) => void): void {
  if (warned || !(shortfall.setpriv || shortfall.shell)) return
  warned = true
  const message = shortfall.shell
    ? 'no /bin/sh for the watchdog: if this wrapper is killed with SIGKILL, the processes its command started run on'
    : 'no setpriv (util-linux): if this wrapper is killed with SIGKILL in the instant its command starts, the command may run on'
  err(logLine('WARN', message, { setpriv: !shortfall.setpriv, watchdog: !shortfall.shell }))
}

function commandEnv(run: SingletonRun, tick: string | undefined): NodeJS.ProcessEnv {
  const { handle } = run
  return {
    ...process.env,
    [EXEC_ENV.token]: String(handle.token),
    [EXEC_ENV.key]: handle.key,
    [EXEC_ENV.owner]: handle.lease.owner,
    [EXEC_ENV.expiresAt]: handle.expiresAt.toISOString(),
    ...(tick !== undefined && { [EXEC_ENV.tick]: tick }),
  }
}

/** The lifecycle's one line per outcome, as JSON on stderr: stdout is the command's. */
function stderrLogger(err: (text: string) => void): SingletonLogger {
  return {
    info: (message, fields) => err(logLine('INFO', message, fields)),
    warn: (message, fields) => err(logLine('WARN', message, fields)),
    error: (message, fields) => err(logLine('ERROR', message, fields)),
  }
}

function logLine(level: string, message: string, fields: Record<string, unknown>): string {
  return JSON.stringify({ level, message, ...fields }, (_key, value: unknown) =>
    value instanceof Error ? { name: value.name, message: value.message } : value,
  )
}
