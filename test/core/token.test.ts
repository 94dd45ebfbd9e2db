import { describe, expect, it } from 'vitest'
import type { ServerTime } from '../../lib/core/server-clock.js'
import { isAheadOfClock, tokenAfter, tokenWaitMs } from '../../lib/core/token.js'
import { LockConflictError } from '../../lib/index.js'

const server = (lower: number, upper: number): ServerTime => ({
  lower,
  upper,
  mid: (lower + upper) / 2,
  halfWidth: (upper - lower) / 2,
})
const NOW = 1_800_000_000_000

describe('the next token', () => {
  it('is the latest the store clock may read, rounded up to a whole ms, when that is above every token seen', () => {
    expect(tokenAfter(42, server(NOW, NOW + 999.2), 'k')).toBe(NOW + 1_000)
  })

  it('is one above the highest token seen when that is at or above the clock', () => {
    expect(tokenAfter(NOW + 1_000, server(NOW, NOW + 1_000), 'k')).toBe(NOW + 1_001)
    expect(tokenAfter(NOW + 999, server(NOW, NOW + 1_000), 'k')).toBe(NOW + 1_000)
  })

  it('is refused past the largest safe integer, whatever the clock', () => {
    expect(() => tokenAfter(Number.MAX_SAFE_INTEGER, server(NOW, NOW), 'k')).toThrow(LockConflictError)
  })
})

describe('the wait before a token is handed out', () => {
  it('lasts until the earliest the store clock may read has passed the token', () => {
    expect(tokenWaitMs(NOW + 1_000, server(NOW, NOW + 1_000))).toBe(1_001)
    expect(tokenWaitMs(NOW + 1_000, server(NOW + 999.5, NOW + 1_999))).toBe(2)
  })

  it('is not over when the clock has only reached the token: a later acquisition could take it again', () => {
    // A later acquisition takes at least the latest the clock may read, rounded up: the token
    // itself, if the earliest reading were only equal to it.
    expect(tokenWaitMs(NOW + 1_000, server(NOW + 1_000, NOW + 1_000))).toBe(1)
    expect(tokenAfter(0, server(NOW + 1_000, NOW + 1_000), 'k')).toBe(NOW + 1_000)
  })

  it('is over once the clock has passed the token, and never negative', () => {
    expect(tokenWaitMs(NOW + 1_000, server(NOW + 1_000.5, NOW + 2_000))).toBe(0)
    expect(tokenWaitMs(NOW, server(NOW + 5_000, NOW + 6_000))).toBe(0)
  })

  it('is waited out for a token up to 10 s ahead of the latest the clock may read, with no exception', () => {
    const clock = server(NOW, NOW + 1_000)
    expect(isAheadOfClock(NOW + 11_000, clock)).toBe(false)
    expect(tokenWaitMs(NOW + 11_000, clock)).toBe(11_001)
    expect(isAheadOfClock(NOW + 11_001, clock)).toBe(true)
    expect(tokenWaitMs(NOW + 11_001, clock)).toBe(11_002)
  })
})

describe('a token more than 10 s ahead of the store clock', () => {
  const clock = server(NOW, NOW + 1_000)

  it('is followed while it is at most 10 s ahead of the latest the clock may read', () => {
    expect(tokenAfter(NOW + 11_000, clock, 'k')).toBe(NOW + 11_001)
  })

  it('is not followed: a typed refusal that names the repair, reset back to the clock', () => {
    const refusal = (() => {
      try {
        tokenAfter(NOW + 11_001, clock, 'jobs/k')
      } catch (error) {
        return error
      }
    })()
    expect(refusal).toBeInstanceOf(LockConflictError)
    expect(refusal).toMatchObject({ reason: 'record-ahead-of-clock', key: 'jobs/k' })
    expect((refusal as Error).message).toMatch(
      /token 1800000011001 is more than 10 s ahead of the store's clock \(1800000001000 ms at most\)/,
    )
    expect((refusal as Error).message).toMatch(/Nothing was written/)
    expect((refusal as Error).message).toMatch(
      /lambda-singleton reset \(--bucket B \| --table T\) --key jobs\/k --back-to-clock.*new LockOperator\(\{ store, key \}\)\.reset\(\{ backToClock: true \}\)/,
    )
    expect((refusal as Error).message).toMatch(/fencedPut wrote with a higher token/)
  })

  it('names the same repair when the tokens are exhausted', () => {
    expect(() => tokenAfter(Number.MAX_SAFE_INTEGER, clock, 'k')).toThrow(
      /largest that can be stored exactly.*--back-to-clock/,
    )
  })
})
