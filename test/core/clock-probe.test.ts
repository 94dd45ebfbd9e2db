import { describe, expect, it } from 'vitest'
import { PROBES_PER_TICK } from '../../lib/core/clock-probe.js'
import { cron, RemoteStore, SECOND, steady } from '../support/remote-store.js'
import { ManualClock } from '../support/sim-clock.js'

const ROUND_TRIP_MS = 4
/** What a warm run may add at a fixed phase: the bar of issue 17. */
const WARM_BAR_MS = Math.max(60, 6 * ROUND_TRIP_MS)

describe('a cron at a fixed phase of the second (simulated time, 4 ms round trips)', () => {
  it.each([0, 5, 120, 500, 880, 999])(
    'narrows in its first invocation at %i ms past the second: every later one adds at most max(60 ms, 6 round trips), with no probe',
    async (phaseMs) => {
      for (const offsetMs of [0, 333.25, -777.5]) {
        const store = new RemoteStore(new ManualClock(), steady(ROUND_TRIP_MS), offsetMs)
        const runs = await cron(store, { periodMs: 2 * SECOND, phaseMs, workMs: 50, invocations: 10 })
        const [first, ...later] = runs
        // The first knows the store's clock to a second: its wait ends when a probe sees the turn.
        expect(first?.addedMs, `offset ${offsetMs}`).toBeLessThan(SECOND + 8 * ROUND_TRIP_MS + 30)
        expect(first?.probes, `offset ${offsetMs}`).toBeLessThanOrEqual(PROBES_PER_TICK + 1)
        for (const run of later) {
          expect(run.addedMs, `offset ${offsetMs}`).toBeLessThanOrEqual(WARM_BAR_MS)
          expect(run.probes, `offset ${offsetMs}`).toBe(0)
        }
      }
    },
  )

  it('keeps a job of a second or more that runs every minute as narrow as its first run made it', async () => {
    const store = new RemoteStore(new ManualClock(), steady(ROUND_TRIP_MS), 123.5)
    const runs = await cron(store, { periodMs: 60 * SECOND, phaseMs: 120, workMs: 1_500, invocations: 30 })
    for (const run of runs.slice(1)) expect(run.addedMs).toBeLessThanOrEqual(WARM_BAR_MS)
    // A few probes a run, while the work runs, find the turn the drift allowance lost.
    const probes = runs.slice(1).map((run) => run.probes)
    expect(Math.max(...probes)).toBeLessThanOrEqual(8)
  })

  it('lets a short job that runs every minute wait longer as the drift allowance loosens its estimate, levelling off at about half a second', async () => {
    // Nothing of the store's second turns within a 50 ms job at a fixed phase, so no probe is
    // sent: the estimate loosens by up to 400 ppm of the minute between runs (24 ms). Its own
    // answers bound it: the read at its phase from below, the release (later in the second by
    // the wait) from above, so the wait settles where the two meet: (1 s - the job) / 2 and the
    // drift. The price of a drift bound that holds without NTP; jobs of a second or more do not
    // pay it (above).
    const store = new RemoteStore(new ManualClock(), steady(ROUND_TRIP_MS), 0)
    const runs = await cron(store, { periodMs: 60 * SECOND, phaseMs: 120, workMs: 50, invocations: 60 })
    const later = runs.slice(1)
    expect(later.every((run) => run.probes === 0)).toBe(true)
    for (let i = 1; i < later.length; i++) {
      const growth = (later[i]?.addedMs ?? 0) - (later[i - 1]?.addedMs ?? 0)
      expect(growth).toBeLessThanOrEqual(25)
    }
    const levelMs = (SECOND - 50 + 24) / 2 + 3 * ROUND_TRIP_MS
    expect(Math.max(...later.map((run) => run.addedMs))).toBeLessThanOrEqual(levelMs)
    expect(later.at(-1)?.addedMs).toBeGreaterThan(levelMs - 40)
  })
})

describe('the token paid only where it is read (simulated time, 4 ms round trips, a cron every minute)', () => {
  /** Each run's lock is a new one (read, write, release), each request a round trip: what any lock adds. */
  const requestsMs = (_run: number) => 3 * ROUND_TRIP_MS

  it.each([0, 120, 500, 999])(
    'adds nothing but its requests to a job that never reads its token, cold and warm, with no probe (%i ms past the second)',
    async (phaseMs) => {
      const store = new RemoteStore(new ManualClock(), steady(ROUND_TRIP_MS), 333.25)
      const runs = await cron(store, {
        periodMs: 60 * SECOND,
        phaseMs,
        workMs: 50,
        invocations: 12,
        token: 'never',
      })
      runs.forEach((run, i) => {
        expect(run.addedMs, `run ${i}`).toBeLessThanOrEqual(requestsMs(i))
        expect(run.probes, `run ${i}`).toBe(0)
      })
    },
  )

  it.each([0, 120, 500, 999])(
    'adds at most a round trip more to a job that reads its token after a second of work, cold and warm (%i ms past the second)',
    async (phaseMs) => {
      const store = new RemoteStore(new ManualClock(), steady(ROUND_TRIP_MS), -777.5)
      const runs = await cron(store, {
        periodMs: 60 * SECOND,
        phaseMs,
        workMs: SECOND,
        invocations: 12,
        token: 'after-work',
      })
      runs.forEach((run, i) => {
        expect(run.addedMs, `run ${i}`).toBeLessThanOrEqual(requestsMs(i) + Math.max(5, ROUND_TRIP_MS))
        expect(run.probes, `run ${i}`).toBe(0)
      })
    },
  )
})
