import { SCHEDULER_EVENT_SOURCE } from '../config.js'

/**
 * The id of the scheduled tick an event stands for, so a second delivery of the same tick can
 * be recognised: the construct's EventBridge Scheduler payload carries `scheduledTime`; an
 * EventBridge rule's "Scheduled Event" carries `time`. Anything else has no tick id.
 */
export function tickIdOf(event: unknown): string | undefined {
  if (typeof event !== 'object' || event === null) return undefined
  const fields = event as Record<string, unknown>
  if (fields.source === SCHEDULER_EVENT_SOURCE && typeof fields.scheduledTime === 'string') {
    return fields.scheduledTime
  }
  if (
    fields.source === 'aws.events' &&
    fields['detail-type'] === 'Scheduled Event' &&
    typeof fields.time === 'string'
  ) {
    return fields.time
  }
  return undefined
}

/**
 * Whether `tick` is done, given the `last_run` of the lock record: the same tick, or (for ticks
 * that are times) an earlier one, delivered late after a newer tick already ran the job.
 */
export function isTickDone(tick: string, lastRun: string | undefined): boolean {
  if (lastRun === undefined) return false
  if (tick === lastRun) return true
  if (!isIsoTime(tick) || !isIsoTime(lastRun)) return false
  return Date.parse(tick) <= Date.parse(lastRun)
}

/**
 * Whether `tick` comes after `than`: both ISO 8601 times, `tick` the later. Ticks that are not
 * times cannot be ordered, so none comes after another, and no tick comes after an unknown one.
 */
export function isNewerTick(tick: string | undefined, than: string | undefined): boolean {
  return isIsoTime(tick) && isIsoTime(than) && Date.parse(tick) > Date.parse(than)
}

/**
 * How long after its scheduled time `tick` is delivered at `now`, in ms, when the tick is an ISO
 * 8601 time (the construct's `scheduledTime`, a rule's `time`); `undefined` when it is not one.
 * Negative for a tick in the future (a clock behind the scheduler's).
 */
export function tickAgeMs(tick: string, now: number): number | undefined {
  const scheduled = isIsoTime(tick) ? Date.parse(tick) : Number.NaN
  return Number.isNaN(scheduled) ? undefined : now - scheduled
}

/**
 * How far `tick` is ahead of the store's clock (`storeNow`, ms), when by more than `marginMs`:
 * a tick that has not come yet, so it was taken from a clock that is fast (a cron host's
 * `--tick "$(date …)"`). `undefined` when it is not that far ahead, or is not a time.
 */
export function tickAheadMs(tick: string, storeNow: number, marginMs: number): number | undefined {
  const age = tickAgeMs(tick, storeNow)
  return age !== undefined && -age > marginMs ? -age : undefined
}

/**
 * Only ISO 8601 times compare by time: `Date.parse` reads dates into many other strings. (The
 * pattern lives in the function, not in a module constant, so that mutation testing can tell
 * which tests reach it instead of running the whole suite for each change to it.)
 */
function isIsoTime(text: string | undefined): text is string {
  const time = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/
  // Stryker disable next-line ConditionalExpression: RegExp.test(undefined) tests "undefined", which no time matches
  return text !== undefined && time.test(text)
}
