import { LogField, type LogLevel } from '../log-contract.js'

/**
 * One line of `exec`'s log, as JSON on stderr (stdout is the command's). The task's metric
 * filters match these lines: their shape is part of the interface (lib/log-contract.ts).
 */
export function logLine(level: LogLevel, message: string, fields: Record<string, unknown>): string {
  return JSON.stringify(
    { [LogField.level]: level, [LogField.message]: message, ...fields },
    (_key, value: unknown) => (value instanceof Error ? { name: value.name, message: value.message } : value),
  )
}
