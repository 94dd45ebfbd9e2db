import { describe, expect, it } from 'vitest'
import { DEFAULT_TTL_MS } from '../../lib/extend.js'
import { leaseRequest, runTiming } from '../../lib/lifecycle/lease-timing.js'
import { ManualClock } from '../support/sim-clock.js'
import { world } from './world.js'

describe('the lease for one invocation (runTiming)', () => {
  const clock = new ManualClock()
  const lambda = (remainingMs: number) => ({ getRemainingTimeInMillis: () => remainingMs })
  const none = { ttlMs: undefined, heartbeatMs: undefined }

  it("holds a Lambda invocation's lease to its deadline, with no heartbeat", () => {
    const timing = runTiming(none, lambda(30_000), clock)
    expect(timing).toEqual({ covers: 'invocation', invocationEnd: clock.now() + 30_000 })
    expect(leaseRequest(timing)).toEqual({ holdUntil: clock.now() + 30_000 })
  })

  it('counts a remaining time below zero (a late clock) as none left', () => {
    expect(runTiming(none, lambda(-50), clock)).toMatchObject({ invocationEnd: clock.now() })
  })

  it('takes a default lease with heartbeats outside Lambda, where the invocation has no known end', () => {
    expect(runTiming(none, {}, clock)).toEqual({
      covers: 'ttl',
      ttlMs: DEFAULT_TTL_MS,
      heartbeatMs: DEFAULT_TTL_MS / 3,
      invocationEnd: undefined,
    })
  })

  it('lets a configured ttl win, with its heartbeat, and still knows when the invocation ends', () => {
    const configured = { ttlMs: 6_000, heartbeatMs: 1_500 }
    const timing = runTiming(configured, lambda(30_000), clock)
    expect(leaseRequest(timing)).toEqual({ ttlMs: 6_000 })
    expect(timing).toEqual({
      covers: 'ttl',
      ttlMs: 6_000,
      heartbeatMs: 1_500,
      invocationEnd: clock.now() + 30_000,
    })
  })
})

describe('a run with a configured ttl', () => {
  it('holds a lease of that ttl while the handler runs, renewed by heartbeats', async () => {
    const { clock, wrap, context, record } = world()
    const ttls: number[] = []
    const handler = wrap(
      async () => {
        for (let i = 0; i < 3; i++) {
          await clock.sleep(2_000)
          ttls.push(record().ttl_ms)
        }
      },
      { ttlMs: 6_000, clockSkewMarginMs: 1_000 },
    )
    await clock.run(handler({}, context({ timeoutMs: 60_000 })))
    expect(ttls).toEqual([6_000, 6_000, 6_000])
  })

  it('sends no renewal past the invocation’s end: a run Lambda stopped lets its lease lapse', async () => {
    const { clock, store, wrap, context, kinds } = world()
    const writes: number[] = []
    store.script(
      'replace',
      ...Array.from({ length: 100 }, () => () => {
        writes.push(clock.now())
        return 'ok' as const
      }),
    )
    // Lambda would have stopped this handler at 10 s; here it goes on, as a thawed process would.
    const handler = wrap(async () => clock.sleep(30_000), { ttlMs: 6_000, clockSkewMarginMs: 1_000 })
    const start = clock.now()
    await clock.run(handler({}, context({ timeoutMs: 10_000 })))
    const renewals = writes.slice(0, -1).map((at) => at - start) // the last write is the release
    expect(Math.max(...renewals)).toBeLessThan(10_000)
    expect(Math.max(...renewals)).toBeGreaterThanOrEqual(10_000 - 2_000) // it did renew up to the end
    expect(kinds()).toContain('lost') // its lease ran out after the invocation's end
  })
})
