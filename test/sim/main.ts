/**
 * `npm run simulate -- [--seeds N] [--from S] [--seed S] [--trace]`: runs N schedules of the
 * deterministic simulator (docs/guarantees.md, "How it is checked"), from seed S on; or replays
 * one seed, shrunk, with its trace. Prints each failing seed, and `N schedules, V violations` last.
 */
import { parseArgs } from 'node:util'
import { shrink } from './shrink.js'
import { scenarioOf, simulate } from './simulation.js'

const { values } = parseArgs({
  options: {
    seeds: { type: 'string', default: '100' },
    from: { type: 'string', default: '1' },
    seed: { type: 'string' },
    trace: { type: 'boolean', default: false },
    'stop-at-first': { type: 'boolean', default: false },
  },
})

async function main(): Promise<number> {
  if (values.seed !== undefined) {
    const outcome = await simulate(scenarioOf(Number(values.seed)), { keepTrace: true })
    const shown = outcome.violations.length > 0 && !values.trace ? await shrink(outcome) : outcome
    for (const line of shown.trace) console.log(line)
    console.log(JSON.stringify(shown.scenario))
    for (const violation of shown.violations)
      console.log(`VIOLATION (shrunk) ${violation.invariant}: ${violation.message}`)
    for (const violation of outcome.violations)
      console.log(`VIOLATION ${violation.invariant}: ${violation.message}`)
    console.log(`1 schedules, ${outcome.violations.length} violations`)
    return outcome.violations.length > 0 ? 1 : 0
  }
  const count = Number(values.seeds)
  const from = Number(values.from)
  const started = performance.now()
  let violations = 0
  let steps = 0
  let ran = 0
  for (let seed = from; seed < from + count; seed++) {
    const outcome = await simulate(scenarioOf(seed))
    ran++
    steps += outcome.steps
    if (outcome.violations.length === 0) continue
    violations += outcome.violations.length
    const first = outcome.violations[0]
    console.log(
      `seed ${seed}: ${first?.invariant}: ${first?.message}  (replay: npm run simulate -- --seed ${seed})`,
    )
    if (values['stop-at-first']) break
  }
  const seconds = ((performance.now() - started) / 1000).toFixed(1)
  console.log(`${steps} events in ${seconds} s`)
  console.log(`${ran} schedules, ${violations} violations`)
  return violations > 0 ? 1 : 0
}

process.exitCode = await main()
