// `lambda-singleton exec` as a program, running the job in test/cli/fixtures/exec-job.mjs.
import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ExecMessage } from '../../lib/log-contract.js'
import { RunningCli } from './cli.js'

const JOB = fileURLToPath(new URL('../cli/fixtures/exec-job.mjs', import.meta.url))
const FENCED_JOB = fileURLToPath(new URL('../cli/fixtures/fenced-job.ts', import.meta.url))

/** One line the job wrote: what happened to it, when, and what exec told it. */
export interface JobNote {
  readonly id: string
  readonly what: 'start' | 'end' | 'SIGTERM' | 'SIGINT' | 'write'
  readonly at: number
  readonly pid: number
  readonly token?: string
  readonly key?: string
  readonly owner?: string
  readonly expiresAt?: string
  readonly tick?: string
  /** On `write` (fenced-job.ts): whether it landed (false: a higher token refused it). */
  readonly ok?: boolean
  /** On `write`: an error other than a refusal. */
  readonly error?: string
}

/** A log file the jobs of one test write to. */
export class JobLog {
  readonly path = join(mkdtempSync(join(tmpdir(), 'exec-job-')), 'log')

  notes(): JobNote[] {
    if (!existsSync(this.path)) return []
    return readFileSync(this.path, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as JobNote)
  }

  /** The job's command line: `node exec-job.mjs LOG ID SLEEP_MS EXIT_CODE [ignore-term]`. */
  job(id: string, options: { sleepMs?: number; exitCode?: number; ignoreTerm?: boolean } = {}): string[] {
    const { sleepMs = 0, exitCode = 0, ignoreTerm = false } = options
    return [
      process.execPath,
      JOB,
      this.path,
      id,
      String(sleepMs),
      String(exitCode),
      ...(ignoreTerm ? ['ignore-term'] : []),
    ]
  }

  /**
   * The command line of the fenced writer (fixtures/fenced-job.ts): writes to `target` (`s3 BUCKET
   * KEY`, or `dynamodb TABLE PARTITION_KEY KEY`) every 100 ms for `writeForMs`, fenced by its token.
   */
  fencedJob(id: string, target: readonly string[], options: { writeForMs: number; ignoreTerm?: boolean }) {
    return [
      process.execPath,
      '--import',
      'tsx',
      '--conditions=lambda-singleton-source',
      FENCED_JOB,
      this.path,
      id,
      String(options.writeForMs),
      ...target,
      ...(options.ignoreTerm ? ['ignore-term'] : []),
    ]
  }

  /** Resolves the first note matching `match`, once there is one. */
  async waitFor(match: (note: JobNote) => boolean, timeoutMs = 60_000): Promise<JobNote> {
    const started = performance.now()
    for (;;) {
      const note = this.notes().find(match)
      if (note) return note
      if (performance.now() - started > timeoutMs) {
        throw new Error(`no such note within ${timeoutMs} ms:\n${JSON.stringify(this.notes(), null, 1)}`)
      }
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
  }

  /** Runs of the jobs, by id: [start, end] on the jobs' own clock (one machine). */
  intervals(): { id: string; start: number; end: number; token: number }[] {
    const notes = this.notes()
    return notes
      .filter((note) => note.what === 'start')
      .map((start) => ({
        id: start.id,
        start: start.at,
        end:
          notes.find((note) => note.id === start.id && note.what === 'end')?.at ?? Number.POSITIVE_INFINITY,
        token: Number(start.token),
      }))
      .sort((a, b) => a.start - b.start)
  }
}

/** `exec` started as a program; `exited()` resolves its exit code and signal. */
export class RunningExec extends RunningCli {
  readonly #done: Promise<{ code: number | null; signal: NodeJS.Signals | null }>

  constructor(args: readonly string[], env: Record<string, string>) {
    super(['exec', ...args], env)
    this.#done = new Promise((resolve) => {
      if (this.child.exitCode !== null) resolve({ code: this.child.exitCode, signal: null })
      this.child.once('exit', (code, signal) => resolve({ code, signal }))
    })
  }

  exited(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    return this.#done
  }

  /**
   * Resolves once exec says its command started: its watchdog knows the command's session then.
   * A wrapper killed before (the window exec warns of, which load widens) leaves the command to
   * setpriv's parent-death signal alone, and what it started already running.
   */
  commandStarted(): Promise<void> {
    return this.waitForLog(new RegExp(`"message":"${ExecMessage.CommandStarted}"`))
  }
}

/** Whether a process is alive (signal 0 tests it). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/**
 * Whether a process is running: alive, and not a zombie waiting to be reaped (on Linux, where
 * /proc says; elsewhere signal 0). An orphan whose reaper does not reap stays a zombie, which
 * signal 0 still finds, yet it runs nothing.
 */
/**
 * `pid` as a failure should show it: its state, parent and process group as /proc has them, so
 * that a process found alive says whether it left the group or lost its killer.
 */
function describe(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const [state, ppid, pgrp, session] = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return `${pid} (${stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'))}, state ${state}, ppid ${ppid}, pgrp ${pgrp}, session ${session})`
  } catch {
    return `${pid} (gone meanwhile)`
  }
}

/** exec's watchdog shells still alive on this machine (lib/exec/process-group.ts). */
function watchdogs(): number[] {
  if (!existsSync('/proc/self/cmdline')) return []
  return readdirSync('/proc')
    .filter((entry) => /^[0-9]+$/.test(entry))
    .filter((entry) => {
      try {
        return readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes('read group <&3')
      } catch {
        return false
      }
    })
    .map(Number)
}

export function running(pid: number): boolean {
  if (!existsSync('/proc/self/stat')) return alive(pid)
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3)
    return state !== 'Z' && state !== 'X'
  } catch {
    return false
  }
}

/**
 * A shell command that starts workers in the background, as `./job.sh` or `npm run job` does,
 * and writes each pid (its own last) to a file, so a test can tell whether any of them lives on.
 */
export class ProcessTree {
  readonly path = join(mkdtempSync(join(tmpdir(), 'exec-tree-')), 'pids')

  /**
   * `sh -c` starting `workers` sleeps of `workerSeconds`; then the shell waits for them, or
   * exits at once leaving them behind (`leaveWorkers`). With `ignoreTerm`, the shell and its
   * workers ignore SIGTERM (an ignored signal stays ignored in the programs a shell starts).
   */
  command(
    options: { workers?: number; workerSeconds?: number; ignoreTerm?: boolean; leaveWorkers?: boolean } = {},
  ): string[] {
    const { workers = 2, workerSeconds = 60, ignoreTerm = false, leaveWorkers = false } = options
    const start = Array.from({ length: workers }, () => `sleep ${workerSeconds} & echo $! >> "$1";`).join(' ')
    const script = `${ignoreTerm ? "trap '' TERM;" : ''} ${start} echo $$ >> "$1"; ${leaveWorkers ? 'exit 0' : 'wait'}`
    return ['sh', '-c', script, 'job-tree', this.path]
  }

  pids(): number[] {
    if (!existsSync(this.path)) return []
    return readFileSync(this.path, 'utf8').split('\n').filter(Boolean).map(Number)
  }

  /** Resolves the pids once `count` of them are written. */
  async started(count: number, timeoutMs = 60_000): Promise<number[]> {
    const started = performance.now()
    for (;;) {
      const pids = this.pids()
      if (pids.length >= count) return pids
      if (performance.now() - started > timeoutMs)
        throw new Error(`only ${pids.length} of ${count} pids written`)
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
  }

  /** The pids still running. */
  running(): number[] {
    return this.pids().filter(running)
  }

  /** Ends whatever of the tree still runs: a failed test leaves no sleeps behind. */
  kill(): void {
    for (const pid of this.running()) {
      try {
        process.kill(pid, 'SIGKILL')
      } catch {
        // gone meanwhile
      }
    }
  }

  /** Resolves how long it took until none of the tree runs, or rejects after `timeoutMs`. */
  async gone(timeoutMs: number): Promise<number> {
    const started = performance.now()
    for (;;) {
      if (this.running().length === 0) return performance.now() - started
      if (performance.now() - started > timeoutMs)
        throw new Error(
          `still running after ${timeoutMs} ms: ${this.running().map(describe).join('; ')}; ` +
            `watchdogs alive: ${watchdogs().map(describe).join('; ') || 'none'}`,
        )
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }
}

/**
 * Resolves once process `pid` has a TCP connection open (Linux: its fds against /proc/net/tcp):
 * the CLI is talking to the store, so it has set up its signal handlers and is acquiring (its
 * loader's own sockets are UNIX ones). Elsewhere, after a few seconds.
 */
export async function talkingToStore(pid: number, timeoutMs = 60_000): Promise<void> {
  if (!existsSync('/proc/self/fd')) return new Promise((resolve) => setTimeout(resolve, 3_000))
  const connected = () => {
    try {
      const tcp = ['tcp', 'tcp6']
        .map((file) =>
          existsSync(`/proc/${pid}/net/${file}`) ? readFileSync(`/proc/${pid}/net/${file}`, 'utf8') : '',
        )
        .join('\n')
      const inodes = new Set(tcp.split('\n').map((line) => line.trim().split(/\s+/)[9]))
      return readdirSync(`/proc/${pid}/fd`).some((fd) => {
        const inode = /^socket:\[([0-9]+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1]
        return inode !== undefined && inodes.has(inode)
      })
    } catch {
      return false
    }
  }
  return until(connected, timeoutMs, `${pid} never connected to the store`)
}

/** Resolves once `condition` holds, polling; rejects with `what` after `timeoutMs`. */
export async function until(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const started = performance.now()
  while (!condition()) {
    if (performance.now() - started > timeoutMs) throw new Error(`${what} (${timeoutMs} ms)`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/** `promise`, or a rejection after `ms` saying `what()`: a wrapper that never exits fails its test with the why. */
export function within<T>(ms: number, what: string | (() => string), promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${typeof what === 'string' ? what : what()}: not within ${ms} ms`)),
      ms,
    )
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}
