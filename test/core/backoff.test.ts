import { describe, expect, it } from 'vitest'
import { backoffDelay } from '../../lib/core/backoff.js'

const half = () => 0.5

describe('backoffDelay: capped exponential backoff with full jitter', () => {
  it('draws up to 50 ms, doubling per attempt up to 2 s, by default', () => {
    expect([0, 1, 2, 5, 6, 50].map((attempt) => backoffDelay(attempt, {}, half))).toEqual([
      25, 50, 100, 800, 1000, 1000,
    ])
  })

  it('draws up to the given base and cap', () => {
    expect([0, 1, 2, 3].map((attempt) => backoffDelay(attempt, { baseMs: 100, capMs: 300 }, half))).toEqual([
      50, 100, 150, 150,
    ])
  })

  it('draws whole milliseconds anywhere from 0 to just below the cap', () => {
    expect(backoffDelay(0, {}, () => 0)).toBe(0)
    expect(backoffDelay(0, {}, () => 0.9999)).toBe(49)
  })
})
