import { describe, expect, it } from 'vitest'
import type { Clock } from '../../lib/core/clock.js'
import { tickAheadMs } from '../../lib/schedule/tick.js'
import { schedulerEvent } from '../support/lambda-context.js'
import { KEY, world } from './world.js'

const HOUR = 3_600_000

/** A host's clock `offsetMs` off the true time (the store's), on the simulated timers. */
function hostClock(truth: Clock, offsetMs: number): Clock {
  return {
    now: () => truth.now() + offsetMs,
    sleep: (ms, signal) => truth.sleep(ms, signal),
    schedule: (ms, callback) => truth.schedule(ms, callback),
  }
}

/** The tick a cron host passes (`--tick "$(date -u +%Y-%m-%dT%H:%M:00Z)"`): its own minute. */
const cronTick = (host: Clock) => new Date(Math.floor(host.now() / 60_000) * 60_000).toISOString()

/**
 * Ticks taken from a host's own clock (the cron recipe) are only as good as that clock. A tick
 * ahead of the store's clock by more than the clock-skew margin has not come yet: its run goes
 * on (the lock still keeps it alone), but the tick is not recorded as done, so a host whose
 * clock is right is not told that its ticks ran already.
 */
describe('a tick from a host whose clock is fast', () => {
  it('does not silence a host with a right clock: its next tick still runs', async () => {
    const { clock, wrap, context, kinds } = world()
    const fast = hostClock(clock, HOUR)
    const onFastHost = wrap(async () => 'fast', { clock: fast })
    const onRightHost = wrap(async () => 'right')
    await clock.run(onFastHost(schedulerEvent(cronTick(fast)), context()))
    await clock.run(clock.sleep(5 * 60_000))
    expect(await clock.run(onRightHost(schedulerEvent(cronTick(clock)), context()))).toBe('right')
    expect(kinds()).toEqual(['acquired', 'released', 'acquired', 'released'])
  })

  it('runs, warns that the host’s clock is fast, and leaves last_run as it was', async () => {
    const { clock, wrap, context, lines, record } = world()
    const onRightHost = wrap(async () => 'right')
    const before = cronTick(clock)
    await clock.run(onRightHost(schedulerEvent(before), context()))
    await clock.run(clock.sleep(60_000))
    const fast = hostClock(clock, HOUR)
    expect(
      await clock.run(wrap(async () => 'fast', { clock: fast })(schedulerEvent(cronTick(fast)), context())),
    ).toBe('fast')
    expect(record(KEY).last_run).toBe(before)
    expect(lines).toContainEqual(
      expect.objectContaining({
        level: 'warn',
        message: expect.stringMatching(/ahead of the store's clock.*clock is fast/),
        fields: expect.objectContaining({ key: KEY, outcome: 'acquired' }),
      }),
    )
  })

  it('records a tick ahead by less than the clock-skew margin: a clock a little fast is no fault', async () => {
    const { clock, wrap, context, record, lines } = world()
    const early = hostClock(clock, 1_500) // the default margin is 2 s
    const tick = new Date(early.now()).toISOString()
    await clock.run(wrap(async () => 'early', { clock: early })(schedulerEvent(tick), context()))
    expect(record(KEY).last_run).toBe(tick)
    expect(lines.filter((line) => line.level === 'warn')).toEqual([])
  })
})

describe('tickAheadMs', () => {
  const now = Date.parse('2026-11-25T03:00:00Z')
  it.each([
    ['an hour ahead', '2026-11-25T04:00:00Z', HOUR],
    ['just beyond the margin', '2026-11-25T03:00:02.001Z', 2_001],
    ['exactly the margin ahead', '2026-11-25T03:00:02Z', undefined],
    ['now', '2026-11-25T03:00:00Z', undefined],
    ['in the past', '2026-11-25T02:00:00Z', undefined],
    ['not a time', 'tick-7', undefined],
  ])('is how far a tick %s is ahead, beyond a 2 s margin', (_, tick, ahead) => {
    expect(tickAheadMs(tick, now, 2_000)).toBe(ahead)
  })
})
