import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { serverClockOf } from '../../lib/core/server-clock.js'
import { cron, type Network, RemoteStore } from '../support/remote-store.js'
import { ManualClock } from '../support/sim-clock.js'

describe('the narrowed estimate of the store’s clock (property, simulated time)', () => {
  it('never excludes the store’s time, and every token is handed out only once the store’s clock has passed it, under any offset, drift within the allowance, jittered round trips and phase', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          offsetMs: fc.double({ min: -3_600_000, max: 3_600_000, noNaN: true }),
          drift: fc.double({ min: -190e-6, max: 190e-6, noNaN: true }),
          roundTripMs: fc.integer({ min: 1, max: 80 }),
          seed: fc.integer(),
          phaseMs: fc.integer({ min: 0, max: 999 }),
          periodMs: fc.constantFrom(700, 2_000, 10_000, 60_000, 3_600_000),
          workMs: fc.integer({ min: 0, max: 3_000 }),
        }),
        async ({ offsetMs, drift, roundTripMs, seed, phaseMs, periodMs, workMs }) => {
          let state = seed >>> 0
          const random = () => {
            state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0
            return state / 2 ** 32
          }
          // Each leg takes up to three times its share, independently: answers come back asymmetric.
          const network: Network = {
            legs: () => [
              (roundTripMs / 2) * (0.2 + 2.8 * random()),
              (roundTripMs / 2) * (0.2 + 2.8 * random()),
            ],
          }
          const local = new ManualClock()
          const store = new RemoteStore(local, network, offsetMs, drift)
          const estimate = serverClockOf(store, local)
          const holds = (): void => {
            const time = estimate.at(local.now())
            if (!time) return
            const truth = store.truth()
            expect(time.lower).toBeLessThanOrEqual(truth + 1e-6)
            expect(time.upper).toBeGreaterThanOrEqual(truth - 1e-6)
          }
          store.onSend = holds
          let previous = 0
          const invocations = periodMs >= 60_000 ? 6 : 12
          const runs = await cron(store, { periodMs, phaseMs, workMs, invocations })
          for (const run of runs) {
            expect(run.token).toBeGreaterThan(previous)
            expect(run.handedOutAt).toBeGreaterThan(run.token)
            previous = run.token
          }
          holds()
        },
      ),
      { numRuns: 200 },
    )
  }, 120_000)
})
