// `lambda-singleton exec` as a program, running the job in test/cli/fixtures/exec-job.mjs.
import { existsSync, mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
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
