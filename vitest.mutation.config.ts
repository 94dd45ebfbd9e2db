import { defineConfig, type TestProjectInlineConfiguration } from 'vitest/config'
import base from './vitest.config.js'

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
    setupFiles: ['test/support/fixed-seed.ts'],
    isolate: false,
  },
})
