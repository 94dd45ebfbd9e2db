import { describe, expect, it } from 'vitest'
import { isTickDone, tickIdOf } from '../../lib/extend.js'
import { isSkipResult } from '../../lib/index.js'
import { isNewerTick } from '../../lib/schedule/tick.js'
import { world } from '../lifecycle/world.js'
import { schedulerEvent } from '../support/lambda-context.js'

describe('tickIdOf', () => {
  it('reads the scheduledTime of the construct’s EventBridge Scheduler payload', () => {
    expect(tickIdOf(schedulerEvent('2026-11-21T03:00:00Z'))).toBe('2026-11-21T03:00:00Z')
  })

  it('reads the time of an EventBridge rule’s Scheduled Event', () => {
    const event = { source: 'aws.events', 'detail-type': 'Scheduled Event', time: '2026-11-21T03:00:00Z' }
    expect(tickIdOf(event)).toBe('2026-11-21T03:00:00Z')
  })

  it.each([
    ['null', null],
    ['a string', '2026-11-21T03:00:00Z'],
    ['an event from another source', { ...schedulerEvent('2026-11-21T03:00:00Z'), source: 'my.app' }],
    ['a scheduler payload without a string time', { ...schedulerEvent('x'), scheduledTime: 5 }],
    ['a rule event of another type', { source: 'aws.events', 'detail-type': 'Object Created', time: 't' }],
    [
      'a Scheduled Event from another source',
      { source: 'my.app', 'detail-type': 'Scheduled Event', time: 't' },
    ],
    [
      'a Scheduled Event without a string time',
      { source: 'aws.events', 'detail-type': 'Scheduled Event', time: 5 },
    ],
  ])('finds no tick in %s', (_, event) => {
    expect(tickIdOf(event)).toBeUndefined()
  })
})

describe('isTickDone', () => {
  it.each([
    ['nothing ran yet', '2026-11-21T03:00:00Z', undefined, false],
    ['the same tick ran', 'tick-7', 'tick-7', true],
    ['another tick that is not a time ran', 'tick-7', 'tick-8', false],
    ['a later time ran', '2026-11-21T03:00:00Z', '2026-11-22T03:00:00Z', true],
    ['an earlier time ran', '2026-11-22T03:00:00Z', '2026-11-21T03:00:00Z', false],
    [
      'the same instant ran, written otherwise',
      '2026-11-21T04:00:00+01:00',
      '2026-11-21T03:00:00.000Z',
      true,
    ],
    ['the same instant ran, to the minute', '2026-11-21T03:00Z', '2026-11-21T03:00:00Z', true],
    ['a time ran, this tick is not one', '1', '2026-11-22T03:00:00Z', false],
    ['something that is not a time ran', '2026-11-21T03:00:00Z', '2099', false],
    ['a time with an expanded year', '+002026-11-21T03:00:00Z', '2026-11-22T03:00:00Z', false],
  ])('says whether a tick is done when %s', (_, tickId, lastRun, done) => {
    expect(isTickDone(tickId, lastRun)).toBe(done)
  })
})

describe('isNewerTick (what onHeld: replace compares)', () => {
  const T = '2026-11-25T03:00:00Z'
  it.each([
    ['a later time', '2026-11-25T03:05:00Z', T, true],
    ['a later time in another offset', '2026-11-25T04:01:00+01:00', T, true],
    ['the same time', T, T, false],
    ['the same time in another offset', '2026-11-25T04:00:00+01:00', T, false],
    ['an earlier time', '2026-11-25T02:55:00Z', T, false],
    ['a time after a tick that is not one', '2026-11-25T03:05:00Z', 'batch-1', false],
    ['a tick that is not a time, after a time', 'batch-2', T, false],
    ['two ticks that are not times', 'batch-2', 'batch-1', false],
    ['no tick', undefined, T, false],
    ['an unknown holder tick', T, undefined, false],
  ])('%s: %s after %s is %s', (_, tick, than, newer) => {
    expect(isNewerTick(tick, than)).toBe(newer)
  })
})

describe('per-tick dedupe', () => {
  it('is off with tickId: false: a second delivery of a tick runs', async () => {
    const { clock, wrap, context } = world()
    let runs = 0
    const handler = wrap(async () => ++runs, { tickId: false })
    await clock.run(handler(schedulerEvent('2026-11-21T03:00:00Z'), context()))
    expect(await clock.run(handler(schedulerEvent('2026-11-21T03:00:00Z'), context()))).toBe(2)
  })

  it('reads the tick with the tickId function when one is given', async () => {
    const { clock, wrap, context, record } = world()
    const handler = wrap(async () => 'ran', { tickId: (event) => (event as { day: string }).day })
    await clock.run(handler({ day: 'mon' }, context()))
    expect(record().last_run).toBe('mon')
    expect(await clock.run(handler({ day: 'mon' }, context()))).toMatchObject({ reason: 'duplicate' })
  })

  it('answers a duplicate with the last holder but no end time: nobody holds the lock', async () => {
    const { clock, wrap, context, record } = world()
    const handler = wrap(async () => 'ran')
    await clock.run(handler(schedulerEvent('2026-11-21T03:00:00Z'), context({ requestId: 'r1' })))
    const { token } = record()
    expect(await clock.run(handler(schedulerEvent('2026-11-21T03:00:00Z'), context()))).toEqual({
      skipped: true,
      reason: 'duplicate',
      key: 'locks/nightly-report',
      owner: 'nightly-report/r1',
      token,
      until: undefined,
      tick: '2026-11-21T03:00:00Z',
    })
  })
})

describe('isSkipResult', () => {
  it.each([
    [null, false],
    ['skipped', false],
    [{ skipped: 'yes' }, false],
    [{}, false],
    [{ skipped: true }, true],
  ])('tells %j: %s', (value, expected) => {
    expect(isSkipResult(value)).toBe(expected)
  })
})
