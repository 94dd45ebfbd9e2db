import { availableParallelism } from 'node:os'
import { defineConfig } from 'vitest/config'

// `lambda-singleton-source` makes `lambda-singleton` (self-reference) resolve to the TypeScript
// sources. A project-specific name: the published package.json keeps the condition, and no
// consumer's tool sets it by accident (a plain `source` condition is common, and would point a
// consumer at .ts files the package does not ship).
const source = 'lambda-singleton-source'
const resolve = { conditions: [source, 'import', 'node', 'default'] }

export default defineConfig({
  resolve,
  ssr: { resolve: { conditions: resolve.conditions, externalConditions: [source] } },
  test: {
    // Vitest's default is one worker less than the machine's cores: one on a 2-core CI machine,
    // where the suite then runs file after file. Most of its time is spent waiting (on the
    // engines, on the CLI's child processes, on leases running out), so two files at a time
    // halve the wall time without starving either.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/core/**/*.test.ts', 'test/**/*.unit.test.ts', 'examples/**/*.test.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 's3',
          include: [
            'test/s3/**/*.test.ts',
            'test/middy/**/*.test.ts',
            'test/cli/**/*.test.ts',
            'test/stores/s3.contract.test.ts',
          ],
          exclude: ['**/*.unit.test.ts'],
          globalSetup: ['test/support/global-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'dynamodb',
          include: ['test/dynamodb/**/*.test.ts', 'test/stores/dynamodb.contract.test.ts'],
          exclude: ['**/*.unit.test.ts'],
          globalSetup: ['test/support/dynamodb-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'infra',
          include: ['test/infra/**/*.test.ts', 'test/**/*.infra.test.ts'],
          testTimeout: 120_000,
        },
      },
    ],
  },
})
