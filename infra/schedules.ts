import { Duration, Token } from 'aws-cdk-lib'
import type * as scheduler from 'aws-cdk-lib/aws-scheduler'
import type { Construct } from 'constructs'
import type { SingletonScheduleEvent } from '../lib/config.js'
import { SingletonValidationError } from './errors.js'

/** One EventBridge Scheduler schedule that invokes the singleton function. */
export interface SingletonScheduleProps {
  /**
   * Names the schedule: sent as `schedule` in the event, so a handler can tell its schedules
   * apart (e.g. one per tenant), and used in construct ids. 1–64 letters, digits, `-`, `_`, `.`;
   * unique per function.
   */
  readonly name: string

  /**
   * When it fires: `ScheduleExpression.rate(...)`, `.cron(...)` (six fields, with `?` in exactly
   * one of day-of-month and day-of-week), `.at(...)` for a one-time run, or `.expression(...)`.
   */
  readonly expression: scheduler.ScheduleExpression

  /**
   * Shown in the console next to the schedule.
   *
   * @default no description
   */
  readonly description?: string

  /**
   * A disabled schedule is deployed but does not fire.
   *
   * @default true
   */
  readonly enabled?: boolean

  /**
   * Lets Scheduler spread invocations over a window after the nominal time. `scheduledTime` in
   * the event stays the nominal time, so dedupe is unaffected.
   *
   * @default TimeWindow.off()
   */
  readonly timeWindow?: scheduler.TimeWindow
}

/** Scheduler's own limits on a target's retry policy. */
export const SCHEDULE_LIMITS = {
  maxRetryAttempts: 185,
  minEventAge: Duration.minutes(1),
  maxEventAge: Duration.hours(24),
} as const

const NAME_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/
const RATE_PATTERN = /^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$/
const AT_PATTERN = /^at\(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\)$/
const CRON_PATTERN = /^cron\((.*)\)$/

/** Refuses, at synth time, schedules that CloudFormation or Scheduler would refuse at deploy time. */
export function validateSchedules(scope: Construct, schedules: readonly SingletonScheduleProps[]): void {
  const fail = (why: string): never => {
    throw new SingletonValidationError(`schedules: ${why}`, scope)
  }
  if (schedules.length === 0) fail('at least one schedule is needed')
  const seen = new Set<string>()
  for (const schedule of schedules) {
    const { name } = schedule
    if (!NAME_PATTERN.test(name)) {
      fail(`name ${JSON.stringify(name)} must be 1-64 letters, digits, '-', '_' or '.'`)
    }
    if (seen.has(name)) fail(`name ${JSON.stringify(name)} is used twice`)
    seen.add(name)
    const problem = expressionProblem(schedule.expression.expressionString)
    if (problem) fail(`schedule ${JSON.stringify(name)}: ${problem}`)
  }
}

function expressionProblem(expression: string): string | undefined {
  if (Token.isUnresolved(expression)) return undefined
  const quoted = JSON.stringify(expression)
  const rate = RATE_PATTERN.exec(expression)
  if (rate) return Number(rate[1]) >= 1 ? undefined : `${quoted}: a rate must be at least 1`
  if (AT_PATTERN.test(expression)) return undefined
  const cron = CRON_PATTERN.exec(expression)
  if (cron) {
    const fields = (cron[1] ?? '').trim().split(/\s+/)
    if (fields.length !== 6) {
      return `${quoted}: a cron expression has six fields (minutes hours day-of-month month day-of-week year), found ${fields.length}`
    }
    const questionMarks = [fields[2], fields[4]].filter((field) => field === '?').length
    if (questionMarks !== 1) {
      return `${quoted}: exactly one of day-of-month and day-of-week must be '?'`
    }
    return undefined
  }
  return `${quoted} is not a rate(...), cron(...) or at(...) expression`
}

export type { SingletonScheduleEvent }

/** Refuses a Scheduler retry policy out of Scheduler's range (0-185 retries, 1 minute to 24 hours). */
export function validateRetryPolicy(scope: Construct, retryAttempts: number, maxEventAge: Duration): void {
  const { maxRetryAttempts, minEventAge, maxEventAge: maxAge } = SCHEDULE_LIMITS
  if (!Number.isInteger(retryAttempts) || retryAttempts < 0 || retryAttempts > maxRetryAttempts) {
    throw new SingletonValidationError(
      `retryAttempts must be a whole number from 0 to ${maxRetryAttempts}, got ${retryAttempts}`,
      scope,
    )
  }
  if (maxEventAge.isUnresolved()) return
  const seconds = maxEventAge.toSeconds()
  if (seconds < minEventAge.toSeconds() || seconds > maxAge.toSeconds()) {
    throw new SingletonValidationError(
      `maxEventAge must be from 1 minute to 24 hours, got ${maxEventAge.toHumanString()}`,
      scope,
    )
  }
}
