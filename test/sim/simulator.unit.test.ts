import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { type Outcome, scenarioOf, simulate } from './simulation.js'

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

  it('a seed replays its trace exactly, fenced writes included, though the SDK reads its config files on real I/O', async () => {
    // An S3 client's first request reads the shared config files (AWS_CONFIG_FILE) on real fs
    // I/O, once per path and process: the first fencedPut of `npm run simulate -- --seed N` does.
    // A new path per run makes every run meet it. The world must fire no event meanwhile: in
    // these seeds other actors have events due while that first request is in the SDK.
    const given = process.env.AWS_CONFIG_FILE
    let runs = 0
    const coldRun = (seed: number): Promise<Outcome> => {
      process.env.AWS_CONFIG_FILE = join(tmpdir(), `lambda-singleton-sim-${process.pid}-${runs++}`, 'config')
      return simulate(scenarioOf(seed), { keepTrace: true })
    }
    try {
      for (const seed of [2, 5, 10, 16, 20, 1183]) {
        const first = await coldRun(seed)
        const again = await coldRun(seed)
        expect(first.trace.some((line) => line.includes(' s3: '))).toBe(true)
        expect({ seed, steps: again.steps, trace: again.trace }).toEqual({
          seed,
          steps: first.steps,
          trace: first.trace,
        })
      }
    } finally {
      if (given === undefined) delete process.env.AWS_CONFIG_FILE
      else process.env.AWS_CONFIG_FILE = given
    }
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
