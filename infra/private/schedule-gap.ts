import { Token } from 'aws-cdk-lib'
import type * as scheduler from 'aws-cdk-lib/aws-scheduler'

const MINUTE = 60_000
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR

/** How often a schedule fires, as far as an alarm needs to know. */
export type ScheduleGap =
  /** At most this many ms pass between two ticks (or a year's first tick and its start). */
  | { readonly kind: 'recurring'; readonly longestMs: number }
  /** An `at(...)` schedule: it fires once. */
  | { readonly kind: 'once' }
  /** Cannot be told here: a token, or a cron with `L`, `W` or `#` (monthly or rarer). */
  | { readonly kind: 'unknown'; readonly why: string }

const RATE = /^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$/
const UNIT_MS: Record<string, number> = {
  minute: MINUTE,
  minutes: MINUTE,
  hour: HOUR,
  hours: HOUR,
  day: DAY,
  days: DAY,
}

/**
 * The longest time between two ticks of a schedule: exact for a `rate(...)`; for a `cron(...)`,
 * found by listing its ticks over two calendar years (a leap year included), in UTC, plus an hour
 * in any other time zone (a daylight-saving change moves the wall clock by one). A flexible time
 * window adds its length: a tick may be delivered that much after its time.
 */
export function longestGap(
  expression: scheduler.ScheduleExpression,
  timeWindow?: scheduler.TimeWindow,
): ScheduleGap {
  const text = expression.expressionString
  if (Token.isUnresolved(text)) return { kind: 'unknown', why: 'the expression is a token' }
  const window = timeWindow?.maxWindow?.toMilliseconds() ?? 0
  const rate = RATE.exec(text)
  if (rate)
    return { kind: 'recurring', longestMs: Number(rate[1]) * (UNIT_MS[rate[2] ?? ''] ?? DAY) + window }
  if (text.startsWith('at(')) return { kind: 'once' }
  const cron = /^cron\((.*)\)$/.exec(text)
  if (!cron) return { kind: 'unknown', why: `${text} is not a rate, cron or at expression` }
  const longest = cronLongestGap(cron[1] ?? '')
  if (typeof longest === 'string') return { kind: 'unknown', why: longest }
  const zone = expression.timeZone?.timezoneName
  const dst = zone !== undefined && zone !== 'UTC' && zone !== 'Etc/UTC' ? HOUR : 0
  return { kind: 'recurring', longestMs: longest + dst + window }
}

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC']
const DAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT']
/** The calendar ticks are listed over: 2024 (a leap year) and 2025. */
const FROM = Date.UTC(2024, 0, 1)
const TO = Date.UTC(2026, 0, 1)

/** The longest gap between ticks of the cron's six fields, in ms, or why it cannot be told. */
function cronLongestGap(fields: string): number | string {
  const [minutes, hours, dom, month, dow, year] = fields.trim().split(/\s+/)
  if (year === undefined) return 'a cron expression has six fields'
  if (/[LW#]/i.test(`${dom} ${dow}`)) return `day fields with L, W or # (${dom} ${dow}) fire monthly or rarer`
  const sets = {
    minutes: field(minutes, 0, 59),
    hours: field(hours, 0, 23),
    dom: field(dom, 1, 31),
    month: field(month, 1, 12, MONTHS),
    dow: field(dow, 1, 7, DAYS),
    year: field(year, 1970, 2199),
  }
  for (const [name, set] of Object.entries(sets))
    if (set === undefined) return `cannot read its ${name} field`
  const { minutes: mins, hours: hrs, month: months, year: years } = sets as Record<string, Set<number>>
  const byDom = dow === '?'
  const times = [...(hrs as Set<number>)]
    .sort((a, b) => a - b)
    .flatMap((h) => [...(mins as Set<number>)].sort((a, b) => a - b).map((m) => h * HOUR + m * MINUTE))
  let previous = FROM
  let longest = 0
  for (let day = FROM; day < TO; day += DAY) {
    const date = new Date(day)
    if (!months?.has(date.getUTCMonth() + 1) || !years?.has(date.getUTCFullYear())) continue
    const matches = byDom ? sets.dom?.has(date.getUTCDate()) : sets.dow?.has(date.getUTCDay() + 1)
    if (!matches) continue
    for (const time of times) {
      longest = Math.max(longest, day + time - previous)
      previous = day + time
    }
  }
  return Math.max(longest, TO - previous)
}

/** The values a cron field allows (`*`, `?`, lists, ranges, steps, names), or `undefined`. */
function field(
  text: string | undefined,
  min: number,
  max: number,
  names: readonly string[] = [],
): Set<number> | undefined {
  if (text === undefined) return undefined
  const value = (part: string): number | undefined => {
    const named = names.indexOf(part.toUpperCase())
    const number = named >= 0 ? named + 1 : /^\d+$/.test(part) ? Number(part) : Number.NaN
    return number >= min && number <= max ? number : undefined
  }
  const out = new Set<number>()
  for (const item of text.split(',')) {
    const [range = '', stepText] = item.split('/')
    const step = stepText === undefined ? 1 : Number(stepText)
    if (!Number.isInteger(step) || step < 1) return undefined
    let from: number | undefined
    let to: number | undefined
    if (range === '*' || range === '?') [from, to] = [min, max]
    else if (range.includes('-')) [from, to] = range.split('-').map(value) as [number?, number?]
    else [from, to] = [value(range), stepText === undefined ? value(range) : max]
    if (from === undefined || to === undefined) return undefined
    // A range that wraps (FRI-MON) runs to the end and on from the start.
    const span = to >= from ? to - from : to - from + (max - min + 1)
    for (let i = 0; i <= span; i += step) out.add(((from - min + i) % (max - min + 1)) + min)
  }
  return out
}
