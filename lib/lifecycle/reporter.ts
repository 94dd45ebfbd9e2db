import type { SingletonLogger } from './logger.js'
import type { OutcomeEvent } from './outcome.js'

type Level = 'info' | 'warn' | 'error'

/** Writes one log line per outcome and hands the same event to `onOutcome`. */
export type Report = (level: Level, message: string, event: OutcomeEvent) => void

export function reporter(
  logger: SingletonLogger,
  onOutcome: ((event: OutcomeEvent) => void) | undefined,
): Report {
  return (level, message, event) => {
    const { error, ...fields } = event
    logger[level](message, { ...fields, ...(error && { error }), component: 'lambda-singleton' })
    onOutcome?.(event)
  }
}

export function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error))
}
