/**
 * The CLI's exit codes, one per kind of outcome a script may want to tell apart: the contract
 * between the CLI, `exec` (lib/exec, which ends with them) and whoever runs them (a task, a
 * CronJob). docs/cli.md lists them (test/cli/readme.unit.test.ts keeps it in step).
 */
export const ExitCode = {
  /** The command did what it says. */
  Ok: 0,
  /** The store failed or answered something unexpected (no such bucket, access denied, timeouts). */
  Failure: 1,
  /** The command line is wrong: unknown command or option, a missing or malformed value. */
  Usage: 2,
  /** There is no lock object at the key. */
  NotFound: 3,
  /**
   * Nothing was written because the lock's state does not allow it: force-release of a lock
   * that is not held or whose token ran ahead of the store's clock, reset of a held one or with
   * a token too low, or the lock changed meanwhile (pause and resume too).
   */
  Refused: 4,
  /** The object at the key is not a lock record this version reads (`reset` repairs it). */
  Corrupted: 5,
  /** The AWS configuration is incomplete or refused: no region, no credentials, bad credentials. */
  Configuration: 6,
  /** `exec`: another run holds the lock, and `--on-held fail` says to fail (after `--wait`, when given). */
  Held: 7,
  /** `exec`: the lease was lost while the command ran; the command was stopped (SIGTERM, then SIGKILL). */
  Lost: 8,
  /** `exec`: the command was found but could not be started (not executable, permission denied). */
  CannotRun: 126,
  /** `exec`: no such command. */
  CommandNotFound: 127,
  /** Interrupted (Ctrl-C) before done; `watch` ends with 0 instead, as that is how it is stopped. */
  Interrupted: 130,
} as const
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode]
