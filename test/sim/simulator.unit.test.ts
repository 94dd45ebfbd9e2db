import { describe, expect, it } from 'vitest'
import { scenarioOf, simulate } from './simulation.js'

/**
 * The deterministic simulator (docs/guarantees.md, "How it is checked"): a share of the seeds on
 * every `npm test`; CI runs a longer one (`npm run simulate -- --seeds 3000 --from 301`).
 */
const SEEDS = Number(process.env.SIM_SEEDS ?? 300)

describe('the simulated world', () => {
  it(`keeps every promise of docs/guarantees.md over ${SEEDS} seeded schedules`, async () => {
    const failures: string[] = []
    for (let seed = 1; seed <= SEEDS; seed++) {
      const { violations } = await simulate(scenarioOf(seed))
      for (const violation of violations) {
        failures.push(`seed ${seed}: ${violation.invariant}: ${violation.message}`)
      }
    }
    expect(failures).toEqual([])
  }, 120_000)

  it('replays a seed exactly: the same events, the same trace', async () => {
    const first = await simulate(scenarioOf(4242), { keepTrace: true })
    const again = await simulate(scenarioOf(4242), { keepTrace: true })
    expect(again.steps).toBe(first.steps)
    expect(again.trace).toEqual(first.trace)
    expect(first.trace.length).toBeGreaterThan(10)
  })

  it('replays a world with exec hosts and fenced writes exactly', async () => {
    // Seed 31: two exec hosts whose commands start, and runs that write their output.
    const first = await simulate(scenarioOf(31), { keepTrace: true })
    const again = await simulate(scenarioOf(31), { keepTrace: true })
    expect(first.trace.some((line) => line.includes('starts job.sh'))).toBe(true)
    expect(first.trace.some((line) => line.includes(' s3: '))).toBe(true)
    expect(again.trace).toEqual(first.trace)
  })

  it('catches fenced writes whose conditions do not hold: an output object whose token goes back (I3)', async () => {
    let caught = 0
    for (let seed = 1; seed <= 40 && caught === 0; seed++) {
      const scenario = scenarioOf(seed)
      const broken = { ...scenario, faults: { ...scenario.faults, ignoreConditions: true } }
      const { violations } = await simulate(broken)
      caught += violations.filter((violation) => violation.invariant === 'I3').length
    }
    expect(caught).toBeGreaterThan(0)
  }, 60_000)

  it('catches a store whose conditional writes do not hold: two live leases at once', async () => {
    let caught = 0
    for (let seed = 1; seed <= 20 && caught === 0; seed++) {
      const scenario = scenarioOf(seed)
      const broken = { ...scenario, faults: { ...scenario.faults, ignoreConditions: true } }
      const { violations } = await simulate(broken)
      caught += violations.filter((violation) => violation.invariant.startsWith('I1')).length
    }
    expect(caught).toBeGreaterThan(0)
  })
})
