import { defineConfig, type TestProjectInlineConfiguration } from 'vitest/config'
import { BaseSequencer, type TestSpecification } from 'vitest/node'
import base from './vitest.config.js'

/**
 * Runs the slow property tests last. Stryker runs the tests that cover a mutant and stops at the
 * first failure, so a mutant a fast spec kills must not wait for a thousand random runs first.
 */
class PropertiesLast extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files)
    const isProperty = (file: TestSpecification) => file.moduleId.includes('.property.')
    return [...sorted.filter((file) => !isProperty(file)), ...sorted.filter(isProperty)]
  }
}

/**
 * The fast suite alone (the `unit` project: the core's tests and the lifecycle's behaviour suite
 * on the in-memory store and simulated time), as one project, for Stryker (stryker.config.mjs).
 * Property tests run with a fixed seed here, so that a mutant is killed, or not, on every run.
 */
const unit = base.test?.projects?.find(
  (project): project is TestProjectInlineConfiguration =>
    typeof project === 'object' && 'test' in project && project.test?.name === 'unit',
)
if (!unit?.test?.include) throw new Error('vitest.config.ts has no unit project to mutation-test with')

export default defineConfig({
  resolve: base.resolve,
  ssr: base.ssr,
  test: {
    include: unit.test.include,
    exclude: [
      // The simulator's seeds and the spin model cover every mutant and take seconds each: run
      // per surviving mutant they would multiply the run time. `npm test` and CI still run them.
      'test/sim/**',
      'test/model/**',
      // The README's examples build their handlers as they load, which makes every mutant in the
      // option checks "static" for Stryker (re-run against the whole suite): twice the run time.
      // What they show is specified in test/lifecycle; `npm test` still runs them.
      'examples/**',
      // Unit tests of the S3 and DynamoDB stores and of the README: they reach no mutated code
      // (0 mutants covered in a full run), but static mutants and the dry run ran them all.
      'test/s3/**',
      'test/dynamodb/**',
      'test/docs/**',
      // The spin model of the protocol (a minute of model checking in child processes): no library code runs.
      'test/model/**',
      // Runs the CLI in a child process with a package hidden: nothing mutated runs in this one.
      'test/cli/missing-sdk.unit.test.ts',
      // Reads records through release 1.0's parser with vi.mock, which a shared module graph
      // (isolate: false, below) cannot give one file alone: it would fail, or leak into others.
      'test/core/record-compat.test.ts',
      // The lifecycle's behaviour suite (test/lifecycle/behaviour.ts) runs once here, through
      // the Middy adapter (test/middy/singleton.unit.test.ts, which adds its own specs). Through
      // withSingleton it ran the same specs a second time and killed no mutant the first had not.
      'test/lifecycle/with-singleton.unit.test.ts',
    ],
    // One module graph for all test files of a run, instead of one per file: the unit suite's
    // specs share no module state (they pass with --no-isolate), and loading the graph per file
    // was most of each mutant's cost (5 spec files: 2.1 s of CPU per run isolated, 0.75 s not).
    isolate: false,
    setupFiles: ['test/support/fixed-seed.ts'],
    sequence: { sequencer: PropertiesLast },
  },
})
