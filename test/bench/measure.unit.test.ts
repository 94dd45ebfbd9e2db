import { describe, expect, it } from 'vitest'
import { median } from '../../bench/measure.js'

describe("the bench's median", () => {
  it('is the middle value of an odd count', () => {
    expect(median([30, 10, 20])).toBe(20)
  })

  it('is the mean of the two middle values of an even count, not the upper one', () => {
    // Six new processes at phases spread over the second wait 112 to 953 ms for a token: the
    // upper middle value (617) said 80 ms more than the median does.
    expect(median([953, 780, 617, 452, 282, 112])).toBe(534.5)
  })

  it('is NaN for no values', () => {
    expect(median([])).toBeNaN()
  })
})
