// @ts-check
/**
 * Mutation testing of the lock protocol (lib/core) and the run lifecycle (lib/lifecycle) against
 * the fast suite (vitest.mutation.config.ts: the unit project, property tests on a fixed seed):
 * `npm run mutation`. One run for both modules; scripts/mutation/check-scores.mjs then holds each
 * to its own bar (core 85 %, lifecycle 80 %) from the JSON report. `break` is the lower bar.
 *
 * Mutants left alone, and why:
 * - Message text (ignorer `message-text`, scripts/mutation/ignore-message-text.mjs): the
 *   wording of error and log messages, and of the `where` that prefixes them. The error's class,
 *   reason, retryable flag and fields are what callers act on, and those stay mutated.
 * - lib/lifecycle/default-store.ts: loads the S3 store from the environment; only the s3
 *   project, against a real engine, exercises it.
 * - Survivors that are equivalent mutants are marked in the source with
 *   `// Stryker disable next-line <mutator>: <why>`.
 * @type {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
export default {
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.mutation.config.ts', related: false },
  mutate: ['lib/core/**/*.ts', 'lib/lifecycle/**/*.ts', '!lib/lifecycle/default-store.ts'],
  plugins: ['@stryker-mutator/vitest-runner', './scripts/mutation/ignore-message-text.mjs'],
  ignorers: ['message-text'],
  coverageAnalysis: 'perTest',
  // Only the mutated sources get `// @ts-nocheck`: the README test compares examples/ byte for byte.
  disableTypeChecks: 'lib/**/*.ts',
  concurrency: 2,
  thresholds: { high: 90, low: 85, break: 80 },
  reporters: ['clear-text', 'progress', 'json', 'html'],
  jsonReporter: { fileName: 'reports/mutation/mutation.json' },
  htmlReporter: { fileName: 'reports/mutation/mutation.html' },
  clearTextReporter: { allowColor: false, logTests: false, reportScoreTable: true },
  tempDirName: '.stryker-tmp',
  cleanTempDir: true,
}
