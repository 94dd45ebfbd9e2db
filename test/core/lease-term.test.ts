import { describe, expect, it } from 'vitest'
import type { ServerTime } from '../../lib/core/server-clock.js'
import {
  holderDeadline,
  isFreeToTake,
  leaseTermFor,
  leaseTermFromToken,
  leaseTermUntil,
} from '../../lib/core/timing.js'

/** What we know of the store's clock: between `lower` and `upper` (epoch ms). */
const server = (lower: number, upper: number): ServerTime => ({
  lower,
  upper,
  mid: (lower + upper) / 2,
  halfWidth: (upper - lower) / 2,
})
const NOW = 1_800_000_000_000
const MARGIN = 2_000

describe('when a lease is free to take, for a contender', () => {
  it('is at once when it was released (expires_at 0)', () => {
    expect(isFreeToTake(0, Number.NEGATIVE_INFINITY, MARGIN)).toBe(true)
  })

  it('is only once the store clock has surely passed expires_at by more than the margin', () => {
    const expiresAt = NOW / 1000
    expect(isFreeToTake(expiresAt, NOW + MARGIN, MARGIN)).toBe(false)
    expect(isFreeToTake(expiresAt, NOW + MARGIN + 0.5, MARGIN)).toBe(true)
  })
})

describe('a lease of some length, counted from now', () => {
  // Our local clock and the store's agree to within ±50 ms; the store is 10 s ahead.
  const known = server(NOW + 10_000 - 50, NOW + 10_000 + 50)

  it("records an end ttl after the middle of what we know of the store's clock, and its length", () => {
    expect(leaseTermFor(60_000, NOW, known, MARGIN)).toMatchObject({
      expires_at: (NOW + 70_000) / 1000,
      serverNow: NOW + 10_000,
      ttlMs: 60_000,
    })
  })

  it('ends for its holder the margin and the half-width of the estimate before that, by the local clock', () => {
    expect(leaseTermFor(60_000, NOW, known, MARGIN).deadline).toBe(NOW + 60_000 - MARGIN - 50)
  })

  it('records whole milliseconds of store time', () => {
    expect(leaseTermFor(60_000, NOW, server(NOW, NOW + 0.5), MARGIN).expires_at).toBe((NOW + 60_001) / 1000)
  })
})

describe('a new lease, counted from its token (the latest the store clock may read)', () => {
  it('ends ttl after the token, by the store clock', () => {
    const term = leaseTermFromToken(NOW + 1_000, 60_000, NOW, server(NOW, NOW + 1_000), MARGIN)
    expect(term).toMatchObject({ expires_at: (NOW + 61_000) / 1000, serverNow: NOW + 500, ttlMs: 60_000 })
  })

  it('ends for its holder when the store clock may have reached its end less the margin', () => {
    const term = leaseTermFromToken(NOW + 1_000, 60_000, NOW, server(NOW, NOW + 1_000), MARGIN)
    expect(term.deadline).toBe(holderDeadline(term.expires_at, NOW, server(NOW, NOW + 1_000), MARGIN))
    expect(term.deadline).toBe(NOW + 60_000 - MARGIN)
  })
})

describe("a holder's deadline, by the local clock", () => {
  it("comes when the latest the store's clock may read reaches expires_at less the margin", () => {
    // The store may be up to 300 ms ahead of us: we stop 300 ms earlier than our clock alone says.
    expect(holderDeadline((NOW + 60_000) / 1000, NOW, server(NOW - 100, NOW + 300), MARGIN)).toBe(
      NOW + 60_000 - MARGIN - 300,
    )
  })

  it('is a whole millisecond, never later than the exact one', () => {
    expect(holderDeadline((NOW + 60_000) / 1000, NOW, server(NOW, NOW + 0.4), MARGIN)).toBe(
      NOW + 60_000 - MARGIN - 1,
    )
  })
})

describe('a lease held until a given local time', () => {
  it('ends for its holder at that time, whatever the estimate', () => {
    expect(leaseTermUntil(NOW + 30_000, NOW, server(NOW - 400, NOW + 400)).deadline).toBe(NOW + 30_000)
  })

  it("records an end no contender can reach before then: the latest the store's clock can read at that time", () => {
    const term = leaseTermUntil(NOW + 30_000, NOW, server(NOW - 400, NOW + 400))
    expect(term.ttlMs).toBe(30_400)
    expect(term.expires_at).toBe((NOW + 30_400) / 1000)
    expect(term.serverNow).toBe(NOW)
  })
})
