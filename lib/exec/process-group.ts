/**
 * The command `exec` runs, as the job: the command and every process it starts (a shell
 * script's workers, `npm run`'s children) are the job, and the lock is held until all of them are
 * gone, as `flock(1)` holds its lock while any process keeps the lock's descriptor open.
 *
 * The command leads a session of its own (and a process group of its own, the session's first).
 * On Linux the job is that session: whatever a process of the job starts keeps its session id
 * unless it calls `setsid` itself, whereas a process group is left by less: GNU `timeout` makes
 * one for itself and its command, a shell with job control (`set -m`) one per job. /proc tells
 * which processes are in the session; each of their groups is signalled. Where there is no /proc
 * (not Linux), the job is the command's process group alone.
 *
 * Three things take the job down with a wrapper that dies without stopping it (`kill -9`, the
 * out-of-memory killer): its groups are signalled as wholes; a watchdog shell, outside the
 * session, holds one end of a socket whose other end only the wrapper has, and kills the job when
 * that end closes (the kernel closes it however the wrapper dies); and where util-linux `setpriv`
 * exists, the command itself gets a parent-death signal (`PR_SET_PDEATHSIG`), which covers the
 * instant between the command's start and the watchdog's learning which session to kill.
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
 * Reads the session's id (the command's pid, also its group's) from fd 3, then blocks until the
 * wrapper's end closes; a line instead of the end means the wrapper saw the job out itself. Then
 * kills the command's group at once, and every group with a process in the session (from
 * /proc/PID/stat: the fields after the last ") ", comm being free text), in rounds while one is
 * found, for groups made meanwhile. dash's `kill` wants `-KILL -PGID` (no `--`); only a positive
 * number is taken for an id (`-0` would be the watchdog's own group). Without /proc the pattern
 * stays unexpanded, its read fails, and the command's group alone is killed.
 */
const WATCHDOG = `read group <&3 || exit 0
case $group in ''|0|*[!0-9]*) exit 0 ;; esac
if read line <&3; then exit 0; fi
kill -KILL "-$group" 2>/dev/null
for round in 1 2 3 4; do
  found=
  for stat in /proc/[0-9]*/stat; do
    { read -r line <"$stat"; } 2>/dev/null || continue
    set -- \${line##*") "}
    if [ "$4" = "$group" ] && [ "$3" -gt 0 ] 2>/dev/null && [ "$1" != Z ] && [ "$1" != X ]; then
      kill -KILL "-$3" 2>/dev/null
      found=1
    fi
  done
  [ -n "$found" ] || break
done`

/** Rounds of SIGKILL at most, each to the groups the last scan of the session found anew. */
const KILL_ROUNDS = 8

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

  /**
   * Starts `argv` in a group of its own. `beforeStart` hears what is missing before anything is
   * spawned: a warning written after the spawn may never be, if the wrapper is killed at once.
   */
  constructor(
    argv: readonly [string, ...string[]],
    env: NodeJS.ProcessEnv,
    beforeStart?: (shortfall: Shortfall) => void,
  ) {
    const setpriv = process.platform === 'linux' ? findSetpriv(env.PATH) : undefined
    const shell = existsSync(SHELL)
    this.shortfall = { setpriv: setpriv === undefined, shell: !shell }
    beforeStart?.(this.shortfall)
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
    // Into a fresh socket's empty buffer, so written before this returns (libuv tries the write
    // at once): a wrapper killed from here on leaves the watchdog knowing what to kill. Killed
    // between the spawn and here, only setpriv's parent-death signal stops the command.
    else (this.#watchdog?.stdio[3] as Socket | undefined)?.write(`${child.pid}\n`)
  }

  /** Sends `signal` to every process of the job still there: each group of its session. */
  signal(signal: NodeJS.Signals): void {
    if (this.pid !== undefined) signalJob(this.pid, signal)
  }

  /** Whether any process of the job still runs. A zombie runs nothing, though it is still found. */
  get running(): boolean {
    return this.pid !== undefined && jobRuns(this.pid)
  }

  /** Resolves once no process of the job runs. */
  async gone(): Promise<void> {
    while (this.running) await new Promise((resolve) => setTimeout(resolve, GONE_POLL_MS))
  }

  /** The job is gone (or never was): the watchdog stands down without killing anything. */
  close(): void {
    const watchdog = this.#watchdog
    if (!watchdog || watchdog.exitCode !== null || watchdog.signalCode !== null) return
    const channel = watchdog.stdio[3] as Socket | undefined
    // Before the group's id, an end alone tells it there is nothing to watch.
    if (this.pid === undefined) channel?.end()
    else channel?.end('done\n')
  }
}

/**
 * The watchdog shell: its own session, neither the wrapper's (a terminal's Ctrl-C to the
 * wrapper's group misses it) nor the command's (it does not count as the job, nor kill itself).
 */
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

/** A process of the command's session, and the group it is in. */
export interface SessionMember {
  readonly pid: number
  readonly pgrp: number
}

/**
 * The processes of session `sid` that are not zombies, from /proc; `undefined` where there is no
 * /proc (not Linux). A zombie runs nothing, and an orphan's zombie lingers where the reaper does
 * not reap (a container whose first process is `node` or `npm`).
 */
export function sessionMembers(sid: number): SessionMember[] | undefined {
  if (!existsSync('/proc/self/stat')) return undefined
  let entries: string[]
  try {
    entries = readdirSync('/proc')
  } catch {
    return undefined
  }
  const members: SessionMember[] = []
  for (const entry of entries) {
    if (!/^[0-9]+$/.test(entry)) continue
    let stat: string
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
    } catch {
      continue // exited meanwhile
    }
    // "pid (comm) state ppid pgrp session …": comm may hold spaces and parentheses, so from the last ')'.
    const [state, , pgrp, session] = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    if (Number(session) === sid && state !== 'Z' && state !== 'X') {
      members.push({ pid: Number(entry), pgrp: Number(pgrp) })
    }
  }
  return members
}

/**
 * Whether the job that `leader` (the command, a session and group leader) started still runs:
 * on Linux, whether its session has a process that is not a zombie; elsewhere, whether its
 * process group has a process (signal 0, which finds zombies too).
 */
export function jobRuns(leader: number): boolean {
  let found = true
  try {
    process.kill(-leader, 0)
  } catch (error) {
    // EPERM: a member is there, only not ours to signal (it changed its user).
    if ((error as NodeJS.ErrnoException).code === 'EPERM') return true
    found = false // ESRCH: the leader's group is empty; on Linux its session may not be.
  }
  const members = sessionMembers(leader)
  return members === undefined ? found : members.length > 0
}

/**
 * Sends `signal` to every group with a process in `leader`'s session (on Linux; elsewhere, to
 * the leader's group alone). The session is read first and then signalled, so that a process
 * that answers the signal by starting another (a trap's cleanup) does not get it as well. A
 * group made between the read and the signals misses a SIGTERM (the SIGKILL after
 * `--kill-after` finds it); SIGKILL reads the session again, until it finds no group not
 * killed yet. A process gone meanwhile is nothing to tell (ESRCH).
 */
export function signalJob(leader: number, signal: NodeJS.Signals): void {
  const signalled = new Set<number>()
  const send = (pgid: number) => {
    signalled.add(pgid)
    try {
      process.kill(-pgid, signal)
    } catch {
      // ESRCH: nobody left to tell; EPERM: not ours to signal.
    }
  }
  const fresh = () => {
    const members = sessionMembers(leader) ?? []
    return [...new Set(members.map((member) => member.pgrp))].filter((pgid) => !signalled.has(pgid))
  }
  const first = fresh()
  send(leader)
  for (const pgid of first) if (!signalled.has(pgid)) send(pgid)
  if (signal !== 'SIGKILL') return
  for (let round = 1; round < KILL_ROUNDS; round++) {
    const found = fresh()
    if (found.length === 0) return
    for (const pgid of found) send(pgid)
  }
}
