/**
 * The command `exec` runs, as a process group: the command and every process it starts (a shell
 * script's workers, `npm run`'s children) are the job, and the lock is held until all of them are
 * gone, as `flock(1)` holds its lock while any process keeps the lock's descriptor open.
 *
 * Three things take the group down with a wrapper that dies without stopping it (`kill -9`, the
 * out-of-memory killer): the group is signalled as a whole; a watchdog shell, outside the group,
 * holds one end of a socket whose other end only the wrapper has, and kills the group when that
 * end closes (the kernel closes it however the wrapper dies); and where util-linux `setpriv`
 * exists, the command itself gets a parent-death signal (`PR_SET_PDEATHSIG`), which covers the
 * instant between the command's start and the watchdog's learning which group to kill.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { accessSync, constants, existsSync, readdirSync, readFileSync } from 'node:fs'
import type { Socket } from 'node:net'
import { constants as os } from 'node:os'
import { delimiter, join } from 'node:path'
import type { CommandGroup, LeaderExit } from './command-group.js'

/** What the platform lacks for taking the group down with a killed wrapper; empty on Linux. */
export interface Shortfall {
  readonly setpriv: boolean
  readonly shell: boolean
}

/** How often to look whether a group whose command exited still has processes running. */
const GONE_POLL_MS = 250

const SHELL = '/bin/sh'

/**
 * Reads the group's id from fd 3, then blocks until the wrapper's end closes; a line instead of
 * the end means the wrapper saw the group out itself. dash's `kill` wants `-KILL -PGID` (no `--`).
 */
const WATCHDOG = 'read group <&3 || exit 0; if ! read line <&3; then kill -KILL "-$group" 2>/dev/null; fi'

/** Where `setpriv` is, if on the PATH. */
function findSetpriv(path: string | undefined): string | undefined {
  for (const dir of (path ?? '').split(delimiter)) {
    if (dir === '') continue
    const candidate = join(dir, 'setpriv')
    try {
      accessSync(candidate, constants.X_OK)
      return candidate
    } catch {
      // not here
    }
  }
  return undefined
}

export class ProcessGroup implements CommandGroup {
  /** The command's pid, which is also the group's id; `undefined` when it could not start. */
  readonly pid: number | undefined
  /** Resolves how the command ended (not its group: see `gone`). */
  readonly leaderExit: Promise<LeaderExit>
  /** What was missing to take the group down with a killed wrapper. */
  readonly shortfall: Shortfall
  readonly #watchdog: ChildProcess | undefined

  constructor(argv: readonly [string, ...string[]], env: NodeJS.ProcessEnv) {
    const setpriv = process.platform === 'linux' ? findSetpriv(env.PATH) : undefined
    const shell = existsSync(SHELL)
    this.shortfall = { setpriv: setpriv === undefined, shell: !shell }
    this.#watchdog = shell ? startWatchdog() : undefined
    const [program, ...args] = setpriv ? [setpriv, '--pdeathsig', 'KILL', '--', ...argv] : argv
    let child: ChildProcess
    try {
      // detached: the command leads a new session and process group, which is what gets signalled.
      child = spawn(program, args, { stdio: 'inherit', env, detached: true })
    } catch (error) {
      // Some refusals come as a throw, not as the child's 'error' (E2BIG: an argument too long).
      // Thrown after the lock was taken, it would leave the lock held: it is a command that did
      // not start, as any other, so exec reports it and releases.
      this.pid = undefined
      this.leaderExit = Promise.resolve({ kind: 'not-started', error: errnoError(error) })
      this.close()
      return
    }
    this.pid = child.pid
    this.leaderExit = leaderExit(child)
    if (child.pid === undefined) this.close()
    else (this.#watchdog?.stdio[3] as Socket | undefined)?.write(`${child.pid}\n`)
  }

  /** Sends `signal` to every process of the group still there. */
  signal(signal: NodeJS.Signals): void {
    if (this.pid === undefined) return
    try {
      process.kill(-this.pid, signal)
    } catch {
      // ESRCH: nobody left to tell.
    }
  }

  /** Whether any process of the group still runs. A zombie runs nothing, though it is still found. */
  get running(): boolean {
    return this.pid !== undefined && groupRuns(this.pid)
  }

  /** Resolves once no process of the group runs. */
  async gone(): Promise<void> {
    while (this.running) await new Promise((resolve) => setTimeout(resolve, GONE_POLL_MS))
  }

  /** The group is gone (or never was): the watchdog stands down without killing anything. */
  close(): void {
    const watchdog = this.#watchdog
    if (!watchdog || watchdog.exitCode !== null || watchdog.signalCode !== null) return
    const channel = watchdog.stdio[3] as Socket | undefined
    // Before the group's id, an end alone tells it there is nothing to watch.
    if (this.pid === undefined) channel?.end()
    else channel?.end('done\n')
  }
}

/** The watchdog shell: its own session (a terminal's Ctrl-C to the wrapper's group misses it). */
function startWatchdog(): ChildProcess {
  const watchdog = spawn(SHELL, ['-c', WATCHDOG], {
    stdio: ['ignore', 'ignore', 'ignore', 'pipe'],
    detached: true,
  })
  // It must never keep the wrapper alive, nor its failure end it.
  watchdog.unref()
  watchdog.on('error', () => undefined)
  const channel = watchdog.stdio[3] as Socket | undefined
  channel?.on('error', () => undefined)
  channel?.unref()
  return watchdog
}

/** What spawn threw, as the errno error a child's 'error' would carry. */
function errnoError(thrown: unknown): NodeJS.ErrnoException {
  return thrown instanceof Error ? thrown : new Error(String(thrown), { cause: thrown })
}

function leaderExit(child: ChildProcess): Promise<LeaderExit> {
  return new Promise((resolve) => {
    child.once('error', (error: NodeJS.ErrnoException) => {
      // A failed kill of a running command: its exit still comes.
      if (child.pid === undefined) resolve({ kind: 'not-started', error })
    })
    child.once('exit', (code, signal) => {
      resolve({ kind: 'exited', status: code ?? 128 + (signal ? (os.signals[signal] ?? 0) : 0) })
    })
  })
}

/**
 * Whether process group `pgid` has a process that is not a zombie. Signal 0 finds a group while
 * any member is left, zombies included, and an orphan's zombie lingers where the reaper does not
 * reap (a container whose first process is `node` or `npm`): on Linux, /proc tells them apart.
 */
export function groupRuns(pgid: number): boolean {
  try {
    process.kill(-pgid, 0)
  } catch (error) {
    // EPERM: a member is there, only not ours to signal (it changed its user).
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
  if (!existsSync('/proc/self/stat')) return true
  for (const entry of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(entry)) continue
    let stat: string
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
    } catch {
      continue // exited meanwhile
    }
    // "pid (comm) state ppid pgrp …": comm may hold spaces and parentheses, so from the last ')'.
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    if (Number(pgrp) === pgid && state !== 'Z' && state !== 'X') return true
  }
  return false
}
