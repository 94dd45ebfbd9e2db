import { Duration, type Stack } from 'aws-cdk-lib'
import * as ecs from 'aws-cdk-lib/aws-ecs'
import * as lambda from 'aws-cdk-lib/aws-lambda'
import { ScheduleExpression } from 'aws-cdk-lib/aws-scheduler'
import { describe, expect, it } from 'vitest'
import {
  LockBucket,
  LockTable,
  ScheduledSingletonFunction,
  ScheduledSingletonTask,
  SingletonValidationError,
} from '../../infra/index.js'
import { validateLockOptions } from '../../lib/core/lock-options.js'
import { MemoryLockStore } from '../../lib/memory/index.js'
import { FIXTURE_ENTRY, testStack, thrown } from './support.js'

const hourly = [{ name: 'hourly', expression: ScheduleExpression.rate(Duration.hours(1)) }]
const image = ecs.ContainerImage.fromRegistry('public.ecr.aws/docker/library/node:24-slim')

/** A prefix of exactly `bytes` UTF-8 bytes, ending in a separator. */
const prefixOf = (bytes: number, filler = 'p') => `${filler.repeat((bytes - 1) / Buffer.byteLength(filler))}/`

/** Whether the runtime takes this whole key: the check every lock operation makes first. */
function runtimeAccepts(key: string): boolean {
  try {
    validateLockOptions({ key, store: new MemoryLockStore() })
    return true
  } catch {
    return false
  }
}

const inlineFunction = (scope: Stack, id: string) =>
  new lambda.Function(scope, id, {
    runtime: lambda.Runtime.NODEJS_24_X,
    handler: 'index.handler',
    code: lambda.Code.fromInline('export const handler = async () => "ok"'),
  })

describe('the whole lock key, prefix and key together, fits the runtime’s 1024 bytes', () => {
  it('refuses at synth a function whose table prefix and key are over 1024 bytes together', () => {
    const stack = testStack()
    const lockTable = new LockTable(stack, 'Locks', { keyPrefix: prefixOf(1024) })
    const error = thrown(
      () =>
        new ScheduledSingletonFunction(stack, 'Job', {
          entry: FIXTURE_ENTRY,
          schedules: hourly,
          lockTable,
          lockKey: 'nightly-report',
        }),
    )
    expect(error).toBeInstanceOf(SingletonValidationError)
    expect(error.message).toMatch(
      /keyPrefix and lockKey "nightly-report" are 1038 bytes together.*at most 1024/,
    )
  })

  it('refuses a task whose whole key would be over 1024 bytes, as exec would at every run', () => {
    const stack = testStack()
    const lockTable = new LockTable(stack, 'Locks', { keyPrefix: prefixOf(1000) })
    const error = thrown(
      () =>
        new ScheduledSingletonTask(stack, 'Task', {
          image,
          command: ['x'],
          schedules: hourly,
          lockTable,
          lockKey: 'k'.repeat(25),
        }),
    )
    expect(error).toBeInstanceOf(SingletonValidationError)
    expect(error.message).toMatch(/1025 bytes together/)
  })

  it('refuses lockKeys that no key under the prefix could match within 1024 bytes', () => {
    const stack = testStack()
    const lockTable = new LockTable(stack, 'Locks', { keyPrefix: prefixOf(1000) })
    const error = thrown(() =>
      lockTable.bind(inlineFunction(stack, 'Fn'), { lockKey: 'a', lockKeys: [`${'t'.repeat(25)}/*`] }),
    )
    expect(error).toBeInstanceOf(SingletonValidationError)
    expect(error.message).toMatch(/lockKeys entry .* over 1024 bytes/)
  })

  it('measures a LockBucket prefix in bytes: 512 at most, however few characters', () => {
    const stack = testStack()
    // 257 characters, 513 bytes.
    const error = thrown(() => new LockBucket(stack, 'Locks', { keyPrefix: prefixOf(513, 'é') }))
    expect(error).toBeInstanceOf(SingletonValidationError)
    expect(error.message).toMatch(/longer than 512 bytes/)
    expect(() => new LockBucket(stack, 'Fits', { keyPrefix: prefixOf(511, 'é') })).not.toThrow()
  })

  it('measures a LockTable prefix in bytes too', () => {
    const error = thrown(() => new LockTable(testStack(), 'Locks', { keyPrefix: prefixOf(1025, 'é') }))
    expect(error.message).toMatch(/longer than 1024 bytes/)
  })

  it.each([
    ['table', 1023],
    ['table', 1024],
    ['table', 1025],
    ['bucket', 1024],
    ['bucket', 1025],
  ] as const)('agrees with the runtime on a %s key of %i bytes in all', (store, total) => {
    const stack = testStack()
    const keyPrefix = prefixOf(store === 'table' ? 1000 : 512)
    const lockKey = 'k'.repeat(total - Buffer.byteLength(keyPrefix))
    const options =
      store === 'table'
        ? { lockTable: new LockTable(stack, 'Locks', { keyPrefix }) }
        : { lockBucket: new LockBucket(stack, 'Locks', { keyPrefix }) }
    let synthesized = true
    try {
      new ScheduledSingletonFunction(stack, 'Job', {
        entry: FIXTURE_ENTRY,
        schedules: hourly,
        lockKey,
        ...options,
      })
    } catch (error) {
      expect(error).toBeInstanceOf(SingletonValidationError)
      synthesized = false
    }
    expect(synthesized).toBe(runtimeAccepts(`${keyPrefix}${lockKey}`))
    expect(synthesized).toBe(total <= 1024)
  })
})
