/**
 * Supervision of the command `exec` runs under the lock: start it with the lease in its
 * environment, pass signals on to the whole job (the command and every process it started:
 * `CommandGroup`), stop the job when the lease is lost (SIGTERM, then SIGKILL `killAfterMs`
 * later if any of it still runs), and keep the lock until no process of the job runs. The world it runs in (the command's processes, the timer, the
 * signals) comes as parameters, so that the simulator (test/sim) can drive it on simulated
 * time; lib/exec/adapter.ts passes the real ones.
 */

import { type Clock, systemClock } from '../core/clock.js'
import { LockLostError, LostReason } from '../core/errors.js'
import { ExitCode } from '../exit-codes.js'
import { ExecMessage, LogLevel, logLine } from '../log-contract.js'
import { commandEnv, type SupervisedLease } from './command-env.js'
import type { CommandGroup, StartCommand } from './command-group.js'

/** Where the signals to pass on to the command come from: the process's, or a simulation's. */
export interface SignalSource {
  /** Calls `listener` with each signal that comes, until the returned function is called. */
  subscribe(listener: (signal: NodeJS.Signals) => void): () => void
}

/** The world supervision runs in. */
export interface SupervisionWorld {
  /** Starts the command as a group of its own (`ProcessGroup` for real processes). */
  readonly start: StartCommand
  /** The signals passed on to the whole job. */
  readonly signals: SignalSource
  /** Where the log lines go (stderr: stdout is the command's). */
  readonly err: (text: string) => void
  /** Times the SIGKILL after a stop. @default systemClock */
  readonly clock?: Clock
  /** What the command inherits besides the lease's variables. @default process.env */
  readonly env?: NodeJS.ProcessEnv
}

/** The command to run and how hard to stop it (a parsed `exec` line is one). */
export interface SupervisedCommand {
  readonly argv: readonly [string, ...string[]]
  /** From the first stop signal to SIGKILL. */
  readonly killAfterMs: number
  /** The `--tick`, passed on in the environment when given. */
  readonly tick: string | undefined
}

/** How the command ended: its exit status, and whether the lease was lost meanwhile. */
export interface Ended {
  readonly status: number
  readonly lost: boolean
}

const DELIBERATE_LOSS: Readonly<Record<string, string>> = {
  [LostReason.Replaced]: 'replaced by a run of a newer tick',
  [LostReason.ReleasedByOperator]: 'released by an operator',
}

/**
 * Runs the command, a job of its own, with the lease in its environment, until no process of
 * the job runs. Passes the world's signals on to the job; when the lease is lost, sends it
 * SIGTERM. However the job is asked to stop, it gets SIGKILL `killAfterMs` later if any of it
 * still runs.
 */
export async function supervise(
  handle: SupervisedLease,
  command: SupervisedCommand,
  world: SupervisionWorld,
): Promise<Ended> {
  const { err, clock = systemClock } = world
  const group = world.start(command.argv, commandEnv(handle, command.tick, world.env ?? process.env))
  // Written once the group is started: its watchdog has its id by then (ProcessGroup), so a
  // wrapper killed after this line takes the whole job with it, with or without setpriv.
  if (group.pid !== undefined)
    err(
      logLine(LogLevel.Info, ExecMessage.CommandStarted, {
        key: handle.key,
        token: handle.token,
        pid: group.pid,
      }),
    )
  let lost = false
  let cancelKill: (() => void) | undefined
  const stop = (signal: NodeJS.Signals) => {
    group.signal(signal)
    cancelKill ??= clock.schedule(command.killAfterMs, () => group.signal('SIGKILL'))
  }
  const onLost = () => {
    lost = true
    const { reason } = handle.signal
    const why = reason instanceof LockLostError ? reason.reason : undefined
    // A newer tick's replacement and an operator's takeover are done on purpose: warnings.
    const what = DELIBERATE_LOSS[why ?? ''] ?? 'lost'
    err(
      logLine(
        what === 'lost' ? LogLevel.Error : LogLevel.Warn,
        `stopping the command: the lease was ${what}`,
        {
          key: handle.key,
          token: handle.token,
          pid: group.pid,
          killAfterMs: command.killAfterMs,
        },
      ),
    )
    stop('SIGTERM')
  }
  const unsubscribe = world.signals.subscribe(stop)
  if (handle.signal.aborted) onLost()
  else handle.signal.addEventListener('abort', onLost, { once: true })
  try {
    return { status: await outlive(group, command.argv[0], handle.key, err), lost }
  } finally {
    cancelKill?.()
    group.close()
    handle.signal.removeEventListener('abort', onLost)
    unsubscribe()
  }
}

/**
 * The command's status, once no process of its job runs: what the command started and left
 * behind is the job too, and keeps the lock, as a `flock(1)` command's children keep theirs.
 */
async function outlive(
  group: CommandGroup,
  program: string,
  key: string,
  err: (text: string) => void,
): Promise<number> {
  const ended = await group.leaderExit
  if (ended.kind === 'not-started') {
    const { error } = ended
    err(logLine(LogLevel.Error, `cannot run ${program}: ${error.message}`, { key, code: error.code }))
    return error.code === 'ENOENT' ? ExitCode.CommandNotFound : ExitCode.CannotRun
  }
  if (group.running) {
    err(
      logLine(
        LogLevel.Info,
        'command exited; processes it started still run, and keep the lock until they end',
        {
          key,
          status: ended.status,
          pgid: group.pid,
        },
      ),
    )
    await group.gone()
  }
  return ended.status
}
