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
  it('lasts until the earliest the store clock may read has reached the token', () => {
    expect(tokenWaitMs(NOW + 1_000, server(NOW, NOW + 1_000))).toBe(1_000)
    expect(tokenWaitMs(NOW + 1_000, server(NOW + 999.5, NOW + 1_999))).toBe(1)
  })

  it('is over once the clock has reached the token, and never negative', () => {
    expect(tokenWaitMs(NOW + 1_000, server(NOW + 1_000, NOW + 2_000))).toBe(0)
    expect(tokenWaitMs(NOW, server(NOW + 5_000, NOW + 6_000))).toBe(0)
  })

  it('is skipped for a token more than 10 s ahead of the latest the clock may read', () => {
    const clock = server(NOW, NOW + 1_000)
    expect(tokenWaitMs(NOW + 11_000, clock)).toBe(11_000)
    expect(isAheadOfClock(NOW + 11_000, clock)).toBe(false)
    expect(tokenWaitMs(NOW + 11_001, clock)).toBe(0)
    expect(isAheadOfClock(NOW + 11_001, clock)).toBe(true)
  })
})
