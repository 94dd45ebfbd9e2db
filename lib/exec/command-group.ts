/**
 * What supervision needs of the running command: the real process group (process-group.ts)
 * is one, a simulated group in test/sim another, so that a seeded run can drive exec's
 * supervision with members that ignore SIGTERM or a wrapper that crashes.
 */

/** How the group's first process, the command itself, ended. */
export type LeaderExit =
  | { readonly kind: 'exited'; readonly status: number }
  | { readonly kind: 'not-started'; readonly error: NodeJS.ErrnoException }

/** The command and every process it starts, signalled and waited for as one. */
export interface CommandGroup {
  /** The command's pid, which is also the group's id; `undefined` when it could not start. */
  readonly pid: number | undefined
  /** Resolves how the command ended (not its group: see `gone`). */
  readonly leaderExit: Promise<LeaderExit>
  /** Whether any process of the group still runs. */
  readonly running: boolean
  /** Resolves once no process of the group runs. */
  gone(): Promise<void>
  /** Sends `signal` to every process of the group still there. */
  signal(signal: NodeJS.Signals): void
  /** The group is gone (or never was): whatever watched it stands down. */
  close(): void
}

/** Starts `argv` with `env` as a group of its own. */
export type StartCommand = (argv: readonly [string, ...string[]], env: NodeJS.ProcessEnv) => CommandGroup
