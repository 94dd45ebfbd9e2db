import { describe, expect, it } from 'vitest'
import { LockOptionsError } from '../../lib/core/errors.js'
import {
  defaultHeartbeatMs,
  type LeaseTiming,
  minTtlForDefaultHeartbeat,
  validateTiming,
} from '../../lib/core/timing.js'

const DAY = 24 * 3_600_000

const refusal = (timing: LeaseTiming, key?: string) => {
  try {
    validateTiming(timing, 'here', key)
  } catch (error) {
    return error
  }
  return undefined
}

describe('the timing rules every entry point applies', () => {
  it.each<[string, LeaseTiming]>([
    ['a margin over 10 minutes', { clockSkewMarginMs: 600_001 }],
    ['a ttl over 7 days', { ttlMs: 7 * DAY + 1 }],
    ['a ttl as long as the margin', { ttlMs: 2_000 }],
    ['a heartbeat of 0', { ttlMs: 10_000, heartbeatMs: 0 }],
    ['a negative heartbeat', { ttlMs: 10_000, heartbeatMs: -1 }],
    ['a heartbeat as long as ttl - margin', { ttlMs: 10_000, heartbeatMs: 8_000 }],
    ['a heartbeat longer than ttl - margin', { ttlMs: 10_000, heartbeatMs: 9_000 }],
    ['an infinite heartbeat', { ttlMs: 10_000, heartbeatMs: Number.POSITIVE_INFINITY }],
    ['a negative wait', { waitMs: -1 }],
    ['an infinite wait', { waitMs: Number.POSITIVE_INFINITY }],
  ])('refuses %s', (_, timing) => {
    expect(refusal(timing)).toBeInstanceOf(LockOptionsError)
  })

  it.each<[string, LeaseTiming]>([
    ['a margin of exactly 10 minutes', { clockSkewMarginMs: 600_000 }],
    ['a margin of 0', { clockSkewMarginMs: 0 }],
    ['a ttl of exactly 7 days', { ttlMs: 7 * DAY }],
    ['a heartbeat just below ttl - margin', { ttlMs: 10_000, heartbeatMs: 7_999 }],
    ['a wait of 0', { waitMs: 0 }],
  ])('takes %s', (_, timing) => {
    expect(refusal(timing)).toBeUndefined()
  })

  it('refuses a heartbeat without a ttl, saying so', () => {
    expect(refusal({ heartbeatMs: 1_000 })).toMatchObject({ message: expect.stringMatching(/needs ttlMs/) })
  })

  it('names the key of the lock it was checking, when there is one', () => {
    expect(refusal({ ttlMs: 1 }, 'jobs/x')).toMatchObject({ key: 'jobs/x' })
    expect(refusal({ ttlMs: 1 })).toMatchObject({ key: undefined })
  })

  it('names the smallest ttl whose default heartbeat fits above the margin', () => {
    for (const margin of [0, 1, 2, 3, 1_000, 1_999, 2_000, 600_000]) {
      const least = minTtlForDefaultHeartbeat(margin)
      expect(
        refusal({ ttlMs: least, heartbeatMs: defaultHeartbeatMs(least), clockSkewMarginMs: margin }),
      ).toBe(undefined)
      const below = least - 1
      const timing = { ttlMs: below, heartbeatMs: defaultHeartbeatMs(below), clockSkewMarginMs: margin }
      expect(refusal({ ...timing, heartbeatIsDefault: true })).toBeInstanceOf(LockOptionsError)
    }
    expect(minTtlForDefaultHeartbeat(2_000)).toBe(3_001)
  })

  it('renews three times per lease by default', () => {
    expect(defaultHeartbeatMs(60_000)).toBe(20_000)
    expect(defaultHeartbeatMs(10_000)).toBe(3_333)
  })
})
