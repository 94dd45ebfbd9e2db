/** What `exec` runs and how: its settings, as the adapter takes them, whoever parsed them. */
import { DEFAULT_KILL_AFTER_MS } from '../config.js'
import { DEFAULT_TTL_MS } from '../core/timing.js'

/** What `exec` does when another run holds the lock. */
export const ExecOnHeld = {
  /** Exit 0 without running the command: another run is doing the work. */
  Skip: 'skip',
  /**
   * Exit 7 (`Held`) without running the command, so that whatever started it can retry; after
   * waiting up to `--wait`, when given (`--on-held wait` is read as this, its former name).
   */
  Fail: 'fail',
  /**
   * Take the lock from a run of an older `--tick` (its command gets SIGTERM at its wrapper's next
   * heartbeat, and its fenced writes are refused); skip as `skip` does otherwise. Needs `--tick`.
   */
  Replace: 'replace',
} as const
export type ExecOnHeld = (typeof ExecOnHeld)[keyof typeof ExecOnHeld]

/** The command `exec` runs, and how: the CLI parses it from its line (lib/cli/exec-args.ts). */
export interface ExecSettings {
  /** The command and its arguments, as given after `--`. */
  readonly argv: readonly [string, ...string[]]
  readonly ttlMs: number
  readonly onHeld: ExecOnHeld
  readonly waitMs: number
  readonly tick: string | undefined
  /** Skip a tick older than this (`--max-tick-age`). */
  readonly maxTickAgeMs: number | undefined
  /** Pause the job after this many failed runs in a row (`--pause-after-failures`). */
  readonly pauseAfterFailures: number | undefined
  /** From SIGTERM to SIGKILL when the lease is lost. */
  readonly killAfterMs: number
}

/** A lease as long as the library's own default; the kill-after the task construct's too. */
export const EXEC_DEFAULTS = { ttlMs: DEFAULT_TTL_MS, killAfterMs: DEFAULT_KILL_AFTER_MS } as const
