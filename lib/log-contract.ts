/**
 * The JSON log lines that `lambda-singleton exec` writes and the task construct's metric filters
 * read (infra/scheduled-singleton-task.ts): the names both sides need, kept in one place so that
 * a renamed field cannot leave a filter counting nothing. test/cli/exec-metric-filters.test.ts
 * runs the synthesized filters against the lines exec really prints.
 */
import type { OutcomeEvent } from './lifecycle/outcome.js'

/** The `level` of a line, as CloudWatch and Powertools spell it. */
export const LogLevel = { Info: 'INFO', Warn: 'WARN', Error: 'ERROR' } as const
export type LogLevel = (typeof LogLevel)[keyof typeof LogLevel]

/** The fields of a line that the filters read. */
export const LogField = {
  level: 'level',
  message: 'message',
  /** The lock key: the metrics' `LockKey` dimension (a line without it is not counted). */
  key: 'key',
  /** On exec's `command exited`: the command's exit status. */
  status: 'status',
  /** exec's own failure (`--json`, or a command that cannot start): `{ exitCode, … }`. */
  error: 'error',
  /** Within `error`: the exit code exec ends with. */
  exitCode: 'exitCode',
} as const

/**
 * The fields the lifecycle's lines take from its `OutcomeEvent` (reporter.ts writes the event's
 * own property names): tied to the type, so renaming either one fails to compile.
 */
export const OutcomeField = {
  outcome: 'outcome',
  key: 'key',
  heldMs: 'heldMs',
  completed: 'completed',
} as const satisfies Record<string, keyof OutcomeEvent>

/** exec's own messages that the filters match. */
export const ExecMessage = {
  /**
   * The command was started, and whatever takes its job down with a wrapper killed with SIGKILL
   * (its watchdog, its parent-death signal) knows it: `pid` is the command's process, its
   * process group's and its session's id.
   */
  CommandStarted: 'command started',
  /** The command ended, whatever its status: `status` says how. */
  CommandExited: 'command exited',
} as const

/** The JSON path of a field, as a metric filter names it: `$.key`, `$.error.exitCode`. */
export function logPath(...fields: readonly string[]): string {
  return `$.${fields.join('.')}`
}

/**
 * One log line as the contract shapes it: JSON with `level` and `message` first, errors as their
 * name and message. The middleware's console logger and exec (stderr: stdout is the command's)
 * both write with it, so a task's metric filters and a function's log queries read one shape.
 */
export function logLine(level: LogLevel, message: string, fields: Record<string, unknown>): string {
  return JSON.stringify({ [LogField.level]: level, [LogField.message]: message, ...fields }, errorsAsObjects)
}

function errorsAsObjects(_key: string, value: unknown): unknown {
  return value instanceof Error ? { name: value.name, message: value.message } : value
}
