import { NO_FAULTS } from './sim-store.js'
import { type Outcome, type Scenario, simulate } from './simulation.js'

/**
 * A smaller scenario that still fails the same invariant: actors and faults are taken away one
 * at a time, keeping each removal after which the seed still breaks it (VOPR-style, by replay).
 */
export async function shrink(failing: Outcome): Promise<Outcome> {
  const invariant = failing.violations[0]?.invariant
  let best = failing
  const stillFails = async (scenario: Scenario) => {
    const outcome = await simulate(scenario)
    return outcome.violations.some((violation) => violation.invariant === invariant) ? outcome : undefined
  }
  for (const candidate of smaller(best.scenario)) {
    const outcome = await stillFails(candidate(best.scenario))
    if (outcome) best = outcome
  }
  return simulate(best.scenario, { keepTrace: true })
}

type Reduction = (scenario: Scenario) => Scenario

function* smaller(scenario: Scenario): Generator<Reduction> {
  const without = <T>(items: readonly T[], index: number) => items.filter((_, i) => i !== index)
  for (let i = scenario.core.length - 1; i >= 0; i--) yield (s) => ({ ...s, core: without(s.core, i) })
  for (let i = scenario.exclusive.length - 1; i >= 0; i--)
    yield (s) => ({ ...s, exclusive: without(s.exclusive, i) })
  for (let i = scenario.functions.length - 1; i >= 0; i--)
    yield (s) => ({ ...s, functions: without(s.functions, i) })
  yield (s) => ({ ...s, operatorEveryMs: undefined })
  yield (s) => ({ ...s, tamperEveryMs: undefined })
  yield (s) => ({ ...s, crashEveryMs: undefined })
  yield (s) => ({ ...s, freezeEveryMs: undefined })
  yield (s) => ({ ...s, duplicates: 0 })
  for (const fault of [
    'lostRequest',
    'lostAnswer',
    'unavailable',
    'conflict',
    'missingDate',
    'slow',
    'partition',
  ] as const) {
    yield (s) => ({ ...s, faults: { ...s.faults, [fault]: NO_FAULTS[fault] } })
  }
}
