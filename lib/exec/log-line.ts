/**
 * One line of `exec`'s log, as JSON on stderr (stdout is the command's). The task's metric
 * filters match these lines: their shape is part of the interface.
 */
export function logLine(level: string, message: string, fields: Record<string, unknown>): string {
  return JSON.stringify({ level, message, ...fields }, (_key, value: unknown) =>
    value instanceof Error ? { name: value.name, message: value.message } : value,
  )
}
