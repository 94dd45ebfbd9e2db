/**
 * What supervision needs of the running command: the real processes (process-group.ts: on
 * Linux the command's session, elsewhere its process group) are one, a simulated group in
 * test/sim another, so that a seeded run can drive exec's
 * supervision with members that ignore SIGTERM or a wrapper that crashes.
 */

/** How the group's first process, the command itself, ended. */
export type LeaderExit =
  | { readonly kind: 'exited'; readonly status: number }
  | { readonly kind: 'not-started'; readonly error: NodeJS.ErrnoException }

/** The command and every process it starts (the job), signalled and waited for as one. */
export interface CommandGroup {
  /** The command's pid, also its group's and session's id; `undefined` when it could not start. */
  readonly pid: number | undefined
  /** Resolves how the command ended (not its group: see `gone`). */
  readonly leaderExit: Promise<LeaderExit>
  /** Whether any process of the job still runs. */
  readonly running: boolean
  /** Resolves once no process of the job runs. */
  gone(): Promise<void>
  /** Sends `signal` to every process of the job still there. */
  signal(signal: NodeJS.Signals): void
  /** The job is gone (or never was): whatever watched it stands down. */
  close(): void
}

/** Starts `argv` with `env` as a job of its own (a new session and process group). */
export type StartCommand = (argv: readonly [string, ...string[]], env: NodeJS.ProcessEnv) => CommandGroup
