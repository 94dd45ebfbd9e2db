/**
 * `lambda-singleton exec`: the lock around any command, for jobs that outgrow Lambda (an ECS or
 * Fargate task, a Kubernetes CronJob, cron on several hosts). A third thin adapter over the run
 * lifecycle that `singleton()` and `withSingleton()` use: the lifecycle names the owner, acquires
 * (waiting, skipping a tick that completed), heartbeats, reports and releases; this file only
 * runs the command, passes signals on to it, and stops it when the lease is lost.
 */
import { spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { constants } from 'node:os'
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
  const start = await lifecycle.begin(undefined, invocation)
  if (start.status === 'skipped') return skipCode(start.result, settings)
  const { run } = start
  if (context.signal?.aborted) {
    // Stopped while acquiring: give the lock back without running anything.
    await lifecycle.end(run, false)
    return ExitCode.Interrupted
  }
  const ended = await supervise(run, settings, context.err)
  const fields = { key: line.key, token: run.handle.token, status: ended.status, lost: ended.lost }
  context.err(logLine(ended.status === 0 && !ended.lost ? 'INFO' : 'ERROR', 'command exited', fields))
  await lifecycle.end(run, ended.status === 0 && !ended.lost)
  // The command's own status passes through: any number 0-255, not only the CLI's own codes.
  return ended.lost ? ExitCode.Lost : (ended.status as ExitCode)
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
 * Runs the command with the lease in its environment until it exits. Passes the process's
 * signals on; when the lease is lost, sends SIGTERM, and SIGKILL `killAfterMs` later.
 */
function supervise(run: SingletonRun, settings: ExecLine, err: (text: string) => void): Promise<Ended> {
  const { handle } = run
  const [program, ...args] = settings.argv
  let lost = false
  let killTimer: NodeJS.Timeout | undefined
  const child = spawn(program, args, { stdio: 'inherit', env: commandEnv(run, settings.tick) })
  const forward = (signal: NodeJS.Signals) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal)
  }
  const onLost = () => {
    lost = true
    const { reason } = handle.signal
    const replaced = reason instanceof LockLostError && reason.reason === LostReason.Replaced
    err(
      logLine(
        replaced ? 'WARN' : 'ERROR',
        `stopping the command: the lease was ${replaced ? 'replaced by a run of a newer tick' : 'lost'}`,
        {
          key: handle.key,
          token: handle.token,
          pid: child.pid,
          killAfterMs: settings.killAfterMs,
        },
      ),
    )
    forward('SIGTERM')
    killTimer = setTimeout(() => forward('SIGKILL'), settings.killAfterMs)
  }
  forwarding++
  for (const signal of FORWARDED) process.on(signal, forward)
  if (handle.signal.aborted) onLost()
  else handle.signal.addEventListener('abort', onLost, { once: true })

  return new Promise<Ended>((resolve) => {
    let done = false
    const finish = (status: number) => {
      if (done) return
      done = true
      clearTimeout(killTimer)
      handle.signal.removeEventListener('abort', onLost)
      for (const signal of FORWARDED) process.off(signal, forward)
      forwarding--
      resolve({ status, lost })
    }
    child.once('error', (error: NodeJS.ErrnoException) => {
      if (child.pid !== undefined) return // a failed kill of a running command: its exit still comes
      err(logLine('ERROR', `cannot run ${program}: ${error.message}`, { key: handle.key, code: error.code }))
      finish(error.code === 'ENOENT' ? ExitCode.CommandNotFound : ExitCode.CannotRun)
    })
    child.once('exit', (code, signal) => {
      finish(code ?? 128 + (signal ? (constants.signals[signal] ?? 0) : 0))
    })
  })
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
