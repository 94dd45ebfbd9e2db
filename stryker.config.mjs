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
 * - Equivalent mutants, where every mutant of that kind on the line is one, are marked in the
 *   source with `// Stryker disable next-line <mutator>: <why>` (8).
 *
 * Survivors left, by kind (about a dozen; none can change what a lock decides):
 * - Checks that only narrow a type, whose values can never fail them: a found object has no
 *   `unconfirmed`; `undefined <= now` is false; a lost lease always has its error; no tick is done
 *   for a record without last_run, nor when there is no tick at all.
 * - `typeof value === 'object'` before reading a property: a primitive's property reads undefined.
 * - Guards behind guards: the watchdog's "still held?" (it is cancelled whenever the lease stops
 *   being held); reset's "found?" (an absent object's missing body parses as no record, with no
 *   token); acquire()'s holder of a skipped attempt (acquire takes no skipIf).
 * - Performance only: forgetting a cached write that was not used costs a read later, never a
 *   wrong write.
 * - Message text that the ignorer does not see: the "(now token …)" part of a lost lease's message.
 * - The ISO-time pattern of ticks without its `$`: Date.parse refuses whatever would follow. (It
 *   is a static mutant, run against the whole suite; on a loaded machine it may time out instead.)
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
