import { type LockLostError, LostReason } from '../core/errors.js'
import type { SingletonLogger } from './logger.js'
import { Outcome, type OutcomeEvent } from './outcome.js'

export type Level = 'info' | 'warn' | 'error'

/**
 * Writes one log line per outcome and hands the same event to `onOutcome`. Never throws: a
 * report comes after what it tells of (a release that landed, a lock taken), and a sink that
 * fails must not turn that into a failure of the run, nor keep its metrics from being written.
 */
export type Report = (level: Level, message: string, event: OutcomeEvent) => void

export function reporter(
  logger: SingletonLogger,
  onOutcome: ((event: OutcomeEvent) => void) | undefined,
): Report {
  const log = (level: Level, message: string, event: OutcomeEvent): void => {
    const { error, ...fields } = event
    try {
      logger[level](message, { ...fields, ...(error && { error }), component: 'lambda-singleton' })
    } catch {
      // The logger itself failed: there is nowhere left to say so.
    }
  }
  return (level, message, given) => {
    const event = withWholeMs(given)
    log(level, message, event)
    try {
      onOutcome?.(event)
    } catch (error) {
      log('error', `onOutcome threw on "${event.outcome}"; the run goes on as reported`, {
        ...event,
        error: asError(error),
      })
    }
  }
}

/** Durations in whole ms: the clock counts fractions (`performance.now`), a reader wants `412`, not `412.38791`. */
function withWholeMs(event: OutcomeEvent): OutcomeEvent {
  const { waitMs, heldMs, tickAgeMs } = event
  return {
    ...event,
    ...(waitMs !== undefined && { waitMs: Math.round(waitMs) }),
    ...(heldMs !== undefined && { heldMs: Math.round(heldMs) }),
    ...(tickAgeMs !== undefined && { tickAgeMs: Math.round(tickAgeMs) }),
  }
}

export function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error))
}

/** How a run reports the end of its lease: its level, its line, its outcome and what it names. */
export interface LossReport {
  readonly level: Level
  readonly message: string
  readonly outcome: Outcome
  readonly fields: Pick<OutcomeEvent, 'owner' | 'operator'>
}

/**
 * The report of a lease that ended under its run, chosen by why: a replacement by a newer tick
 * and an operator's takeover are done on purpose, warnings with outcomes of their own; anything
 * else is an accident that may have let runs overlap, an error counted as a lost lease.
 */
export function lossReport(error: LockLostError | undefined): LossReport {
  const owner = error?.current && { owner: error.current.owner }
  if (error?.reason === LostReason.Replaced) {
    return {
      level: 'warn',
      message: 'replaced by a run of a newer tick; its signal is aborted',
      outcome: Outcome.Replaced,
      fields: { ...owner },
    }
  }
  const operator = error?.reason === LostReason.ReleasedByOperator ? error.current?.ended_by?.by : undefined
  if (operator !== undefined) {
    const how = error?.current?.ended_by?.action === 'pause' ? 'pause --now' : 'force-release'
    return {
      level: 'warn',
      message: `released by operator ${operator} (${how}); its signal is aborted, its fenced writes are refused`,
      outcome: Outcome.ReleasedByOperator,
      fields: { ...owner, operator },
    }
  }
  return {
    level: 'error',
    message: 'LEASE LOST: another run may have overlapped this one; only fenced writes are safe',
    outcome: Outcome.Lost,
    fields: { ...owner },
  }
}
