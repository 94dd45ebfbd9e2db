import { describe, expect, it } from 'vitest'
import type { LockRecord } from '../../lib/core/record.js'
import { LockOptionsError, withSingleton } from '../../lib/index.js'
import { singleton } from '../../lib/middy/index.js'
import { countFailures } from '../../lib/schedule/failures.js'

const record: LockRecord = { v: 1, token: 9, run: 5, expires_at: 0, owner: 'job/5' }
const failed = (
  fields: Partial<LockRecord>,
  pauseAfterFailures?: number,
  error: unknown = new Error('boom'),
) =>
  countFailures(
    { ...record, ...fields },
    { succeeded: false, error, pauseAfterFailures, by: 'job/5', now: 1_500 },
  )

describe('countFailures', () => {
  it('clears the count on a completed run, and writes nothing when there was none', () => {
    const done = (fields: Partial<LockRecord>) =>
      countFailures(
        { ...record, ...fields },
        { succeeded: true, error: undefined, pauseAfterFailures: 1, by: 'x', now: 0 },
      )
    expect(done({})).toEqual({ schedule: {}, failures: 0, pause: undefined })
    expect(done({ failures: 2, failed_run: 4 }).schedule).toEqual({ failures: null, failed_run: null })
    expect(done({ failures: 2 }).schedule).toEqual({ failures: null, failed_run: null })
    expect(done({ failed_run: 2 }).schedule).toEqual({ failures: null, failed_run: null })
  })

  it('adds a failed run to the row when the last failure was the run before, else starts a row', () => {
    expect(failed({})).toEqual({ schedule: { failures: 1, failed_run: 5 }, failures: 1, pause: undefined })
    expect(failed({ failures: 2, failed_run: 4 }).failures).toBe(3)
    expect(failed({ failures: 2, failed_run: 3 }).failures).toBe(1) // a run between was not counted
    expect(failed({ failures: 2, failed_run: 5 }).failures).toBe(1)
    expect(failed({ failures: 2 }).failures).toBe(1)
    expect(failed({ failed_run: 4 }).failures).toBe(1)
    expect(failed({ run: undefined, failures: 2, failed_run: 0 }).schedule).toEqual({
      failures: 1,
      failed_run: 0,
    })
  })

  it('pauses when the row reaches pauseAfterFailures, saying why, and not when paused already', () => {
    expect(failed({ failures: 1, failed_run: 4 }, 3).pause).toBeUndefined()
    const paused = failed({ failures: 2, failed_run: 4 }, 3)
    expect(paused.pause).toEqual({
      by: 'job/5',
      at: 1.5,
      note: '3 failed runs in a row (pauseAfterFailures: 3); the last: Error: boom',
    })
    expect(paused.schedule).toEqual({ failures: 3, failed_run: 5, paused: paused.pause })
    expect(failed({ failures: 5, failed_run: 4 }, 3).pause).toBeDefined()
    expect(failed({}, 1).pause?.note).toBe(
      '1 failed runs in a row (pauseAfterFailures: 1); the last: Error: boom',
    )
    expect(failed({ paused: { by: 'op', at: 1 } }, 1).pause).toBeUndefined()
    expect(failed({}, undefined).pause).toBeUndefined()
  })

  it('says what the last failure was, kept short', () => {
    const unknown = countFailures(record, {
      succeeded: false,
      error: undefined,
      pauseAfterFailures: 1,
      by: 'x',
      now: 0,
    })
    expect(unknown.pause?.note).toBe('1 failed runs in a row (pauseAfterFailures: 1)')
    expect(failed({}, 1, 'text').pause?.note).toMatch(/; the last: text$/)
    const long = failed({}, 1, new TypeError('x'.repeat(300))).pause?.note ?? ''
    expect(long).toMatch(/; the last: TypeError: x+…$/)
    expect(long.length - long.indexOf('the last: ') - 'the last: '.length).toBe(200)
    expect(failed({}, 1, new Error('y'.repeat(193))).pause?.note).toMatch(/y{193}$/)
  })
})

describe('pauseAfterFailures', () => {
  it.each([0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '3', null])(
    'refuses %j, saying what it takes',
    (value) => {
      const options = { pauseAfterFailures: value as number }
      expect(() => withSingleton(async () => {}, options)).toThrow(LockOptionsError)
      expect(() => withSingleton(async () => {}, options)).toThrow(
        /^withSingleton\(\): pauseAfterFailures must be a whole number of failed runs, 1 or more, got /,
      )
      expect(() => singleton(options)).toThrow(/^singleton\(\): pauseAfterFailures must be/)
    },
  )

  it('takes 1 and more', () => {
    expect(() => withSingleton(async () => {}, { pauseAfterFailures: 1 })).not.toThrow()
    expect(() => singleton({ pauseAfterFailures: 1000 })).not.toThrow()
  })
})
