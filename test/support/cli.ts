import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import type { CliIo } from '../../lib/cli/main.js'
import { runCli } from '../../lib/cli/main.js'

const root = fileURLToPath(new URL('../..', import.meta.url))
const program = ['--import', 'tsx', '--conditions=lambda-singleton-source', 'lib/cli/main.ts']

export interface ProgramResult {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs the CLI in this process, collecting what it prints. */
export async function cliIn(argv: readonly string[], io: Omit<CliIo, 'out' | 'err'>) {
  const out: string[] = []
  const err: string[] = []
  const code = await runCli(argv, { ...io, out: (l) => out.push(l), err: (l) => err.push(l) })
  return { code, out: out.join('\n'), err: err.join('\n') }
}

/** `watch` run in this process: its frames as they come, and Ctrl-C as an abort. */
export class WatchingCli {
  readonly frames: string[] = []
  readonly errors: string[] = []
  readonly #interrupt = new AbortController()
  readonly #done: Promise<number>

  constructor(argv: readonly string[], io: Omit<CliIo, 'out' | 'err' | 'signal'>) {
    this.#done = runCli(argv, {
      ...io,
      signal: this.#interrupt.signal,
      out: (frame) => this.frames.push(frame),
      err: (line) => this.errors.push(line),
    })
  }

  /** The first frame from the `from`-th on that matches `pattern`, once there is one. */
  async waitFor(pattern: RegExp, from = 0, timeoutMs = 30_000): Promise<string> {
    const started = performance.now()
    for (;;) {
      const frame = this.frames.slice(from).find((candidate) => pattern.test(candidate))
      if (frame !== undefined) return frame
      if (performance.now() - started > timeoutMs)
        throw new Error(`no frame matched ${pattern} in ${timeoutMs} ms:\n${this.frames.join('\n')}`)
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }

  /** Interrupts it; resolves its exit code. */
  stop(): Promise<number> {
    this.#interrupt.abort()
    return this.#done
  }
}

/**
 * Runs the CLI as a program from its sources, with only `env` (and PATH, and no AWS config
 * files of this machine's user) in its environment; resolves however it exits.
 */
export function runCliProgram(args: readonly string[], env: Record<string, string>): Promise<ProgramResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...program, ...args],
      { cwd: root, env: programEnv(env) },
      (error, stdout, stderr) => {
        const code = error ? ((error as { code?: unknown }).code as number | null) : 0
        resolve({ code: typeof code === 'number' ? code : null, stdout, stderr })
      },
    )
  })
}

/** The CLI started as a program and left running (`watch`), its output collected as it comes. */
export class RunningCli {
  readonly child: ChildProcess
  stdout = ''
  stderr = ''
  readonly #exited: Promise<[number | null, NodeJS.Signals | null]>

  constructor(args: readonly string[], env: Record<string, string>) {
    this.child = spawn(process.execPath, [...program, ...args], { cwd: root, env: programEnv(env) })
    this.child.stdout?.on('data', (chunk: Buffer) => {
      this.stdout += chunk.toString()
    })
    this.child.stderr?.on('data', (chunk: Buffer) => {
      this.stderr += chunk.toString()
    })
    this.#exited = once(this.child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>
  }

  /** Resolves once the output so far matches `pattern`, from the character `from` on. */
  waitFor(pattern: RegExp, from = 0, timeoutMs = 30_000): Promise<void> {
    return this.#waitUntil(
      () => pattern.test(this.stdout.slice(from)),
      () => `no ${pattern} in the CLI's output within ${timeoutMs} ms:\n${this.stdout}${this.stderr}`,
      timeoutMs,
    )
  }

  /** Resolves once the CLI's log (stderr) so far matches `pattern`. */
  waitForLog(pattern: RegExp, timeoutMs = 30_000): Promise<void> {
    return this.#waitUntil(
      () => pattern.test(this.stderr),
      () => `no ${pattern} in the CLI's log within ${timeoutMs} ms:\n${this.stderr}`,
      timeoutMs,
    )
  }

  async #waitUntil(found: () => boolean, notFound: () => string, timeoutMs: number): Promise<void> {
    const started = performance.now()
    while (!found()) {
      if (this.child.exitCode !== null)
        throw new Error(`the CLI exited (${this.child.exitCode}): ${this.stderr}`)
      if (performance.now() - started > timeoutMs) throw new Error(notFound())
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }

  /** Sends `signal` and resolves the exit code (null when the signal killed it). */
  async stop(signal: NodeJS.Signals = 'SIGINT'): Promise<number | null> {
    this.child.kill(signal)
    const [code] = await this.#exited
    return code
  }
}

function programEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    // Keep this machine's ~/.aws out of it, and the instance metadata service: the test says all.
    HOME: '/nonexistent-home',
    AWS_CONFIG_FILE: '/nonexistent/aws-config',
    AWS_SHARED_CREDENTIALS_FILE: '/nonexistent/aws-credentials',
    AWS_EC2_METADATA_DISABLED: 'true',
    ...env,
  }
}
