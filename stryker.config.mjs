// @ts-check
/**
 * Mutation testing of the lock protocol (lib/core), schedule control (lib/schedule), the
 * operator's side (lib/operator) and the run lifecycle (lib/lifecycle) against the fast suite (vitest.mutation.config.ts: the unit project,
 * property tests on a fixed seed): `npm run mutation`. One run for all four; scripts/mutation/check-scores.mjs then holds each
 * to its own bar (core 85 %, schedule, operator and lifecycle 80 %) from the JSON report. `break` is the lower bar.
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
 * Survivors left, by kind (none can change what a lock decides; each was looked at):
 * - Checks that only narrow a type, whose values can never fail them: a found object has no
 *   `unconfirmed`; `undefined <= now` is false; a lost lease always has its error; no tick is done
 *   for a record without last_run, nor when there is no tick at all; a `run` the record parser
 *   let through is a safe integer.
 * - `typeof value === 'object'` before reading a property: a primitive's property reads undefined.
 * - Guards behind guards: the watchdog's "still held?" (it is cancelled whenever the lease stops
 *   being held), and its re-arming at a renewal and when it fires early (each covers the other);
 *   reset's "found?" (an absent object's missing body parses as no record, with no token);
 *   acquire()'s holder of a skipped attempt (acquire takes no skipIf); the tokens-exhausted and
 *   record-ahead-of-clock checks of `inspect` (right after a dated read, no other error can come
 *   from building the record).
 * - Precision only, never safety: the clock estimate's boundaries (a zero-width interval taken
 *   for a contradiction starts over from the new answer; a round trip of exactly 5 s), the settle
 *   read's clock sample, the cap of a 409 pause at the lease's end, `>=` for `>` where equality
 *   takes a millisecond-exact coincidence (the 64 KiB size).
 * - Performance only: forgetting a cached write that was not used costs a read later, never a
 *   wrong write (every write is conditional); a clock probe's pacing (when it is sent, how far
 *   apart) costs requests or a longer wait, never a token handed out early (the property test of
 *   test/core/clock-probe.test.ts holds every estimate against the store's true time).
 * - Message text that the ignorer does not see: a message chosen by a conditional expression,
 *   the parts built before the call, the "(now token …)" part of a lost lease's message, error
 *   `name`s (classes are checked with instanceof), `Buffer.byteLength`'s encoding ('' is UTF-8).
 * - The ISO-time pattern of ticks without its `$`: Date.parse refuses whatever would follow. (It
 *   is a static mutant, run against the whole suite; on a loaded machine it may time out instead.)
 * @type {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
export default {
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.mutation.config.ts', related: false },
  mutate: [
    'lib/core/**/*.ts',
    'lib/schedule/**/*.ts',
    'lib/operator/**/*.ts',
    'lib/lifecycle/**/*.ts',
    '!lib/lifecycle/default-store.ts',
  ],
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
  // The local engines' state: a running RADOS Gateway's admin socket cannot be copied into the
  // sandbox (ENXIO), and the unit project needs no engine.
  ignorePatterns: ['.s3-local', '.dynamodb-local', 'cdk.out', 'coverage', '.scratch'],
  tempDirName: '.stryker-tmp',
  cleanTempDir: true,
}
