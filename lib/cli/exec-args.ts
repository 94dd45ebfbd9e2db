/** The options of `exec`, read from the command line (see commands-spec.ts for their help). */
import { MAX_DURATION_MS, maxTickAgeProblem, pauseAfterFailuresProblem } from '../config.js'
import { DEFAULT_CLOCK_SKEW_MARGIN_MS, minTtlForDefaultHeartbeat } from '../core/timing.js'
import { EXEC_DEFAULTS, ExecOnHeld, type ExecSettings } from '../exec/settings.js'
import { UsageError } from './exit-codes.js'

/** The former name of `--on-held fail` with `--wait`, still read. */
const FORMER_WAIT = 'wait'

const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 }

type Values = Readonly<Record<string, string | boolean | undefined>>

export function execLine(values: Values, argv: readonly string[]): ExecSettings {
  const [program, ...args] = argv
  if (program === undefined || program === '')
    throw new UsageError('exec needs the command to run after "--"', 'exec')
  const text = (name: string) => (typeof values[name] === 'string' ? (values[name] as string) : undefined)
  const given = text('on-held') ?? ExecOnHeld.Skip
  const wait = text('wait')
  // `wait` was `fail` with a --wait it required: one behaviour, one word, as the handler's onHeld.
  if (given === FORMER_WAIT && wait === undefined)
    throw new UsageError('--on-held wait needs --wait DURATION: how long to wait at most', 'exec')
  const onHeld = given === FORMER_WAIT ? ExecOnHeld.Fail : given
  if (!(Object.values(ExecOnHeld) as string[]).includes(onHeld))
    throw new UsageError(`--on-held must be skip, fail or replace, got "${given}"`, 'exec')
  const ttl = text('ttl')
  const killAfter = text('kill-after')
  const tick = text('tick')
  if (onHeld === ExecOnHeld.Replace && tick === undefined)
    throw new UsageError('--on-held replace needs --tick ID: only a newer tick replaces a run', 'exec')
  const maxTickAge = text('max-tick-age')
  if (maxTickAge !== undefined && tick === undefined)
    throw new UsageError('--max-tick-age needs --tick ID: the age of a run is that of its tick', 'exec')
  const pauseAfter = text('pause-after-failures')
  // Digits only: Number() would also read "1e3", " 3" or "0x10".
  const pauseAfterFailures =
    pauseAfter !== undefined && /^[0-9]+$/.test(pauseAfter) ? Number(pauseAfter) : Number.NaN
  const pauseProblem = pauseAfter === undefined ? undefined : pauseAfterFailuresProblem(pauseAfterFailures)
  if (pauseProblem)
    throw new UsageError(`--pause-after-failures ${pauseProblem}, got "${pauseAfter}"`, 'exec')
  return {
    argv: [program, ...args],
    ttlMs: ttl === undefined ? EXEC_DEFAULTS.ttlMs : ttlMs(ttl),
    onHeld: onHeld as ExecOnHeld,
    waitMs: wait === undefined ? 0 : durationMs(wait, '--wait'),
    tick,
    maxTickAgeMs: maxTickAge === undefined ? undefined : maxTickAgeMs(maxTickAge, '--max-tick-age'),
    pauseAfterFailures: pauseAfter === undefined ? undefined : pauseAfterFailures,
    killAfterMs: killAfter === undefined ? EXEC_DEFAULTS.killAfterMs : durationMs(killAfter, '--kill-after'),
  }
}

/** The shortest lease exec can renew: exec takes the library's default margin, and has no option for it. */
const MIN_TTL_MS = minTtlForDefaultHeartbeat(DEFAULT_CLOCK_SKEW_MARGIN_MS)

/**
 * A `--ttl` (see `durationMs`). One too short is refused here, in `--ttl`'s terms: the library
 * would refuse it too, but later, after the store is opened, naming options exec does not have.
 */
function ttlMs(text: string): number {
  const ms = durationMs(text, '--ttl')
  if (ms < MIN_TTL_MS) {
    throw new UsageError(
      `--ttl must be at least ${MIN_TTL_MS}ms: the lease is renewed every third of it, and ` +
        `${DEFAULT_CLOCK_SKEW_MARGIN_MS / 1_000}s of it is kept for clocks that disagree, got "${text}"`,
      'exec',
    )
  }
  return ms
}

/** A `--max-tick-age` (see `durationMs`), by the rule the runtime and the constructs apply too. */
function maxTickAgeMs(text: string, option: string): number {
  const ms = durationMs(text, option)
  const problem = maxTickAgeProblem(ms)
  if (problem) throw new UsageError(`${option} ${problem}, got "${text}"`, 'exec')
  return ms
}

/** `30` (seconds), `30s`, `500ms`, `1.5m`, `2h`: milliseconds, up to a week. */
export function durationMs(text: string, option: string): number {
  const match = /^([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)?$/.exec(text)
  const value = match ? Number(match[1]) * (UNIT_MS[match[2] ?? 's'] ?? 1_000) : Number.NaN
  if (!(Number.isFinite(value) && value <= MAX_DURATION_MS)) {
    throw new UsageError(
      `${option} must be a duration such as 30, 30s, 500ms, 5m or 1h (at most a week), got "${text}"`,
      'exec',
    )
  }
  return Math.round(value)
}
