import { App, Duration, Stack } from 'aws-cdk-lib'
import { Template } from 'aws-cdk-lib/assertions'
import * as lambda from 'aws-cdk-lib/aws-lambda'
import * as s3 from 'aws-cdk-lib/aws-s3'
import { ScheduleExpression } from 'aws-cdk-lib/aws-scheduler'
import { describe, expect, it } from 'vitest'
import {
  LockBucket,
  LockTable,
  ScheduledSingleton,
  ScheduledSingletonFunction,
  SingletonValidationError,
} from '../../infra/index.js'
import { LOCK_ENV } from '../../lib/config.js'
import { FIXTURE_ENTRY, testStack, thrown } from './support.js'

const hourly = [{ name: 'hourly', expression: ScheduleExpression.rate(Duration.hours(1)) }]

/** The LAMBDA_SINGLETON_KEY of every function in `stack`. */
function lockKeys(stack: Stack): unknown[] {
  const functions = Object.values(Template.fromStack(stack).findResources('AWS::Lambda::Function')) as Array<{
    Properties: { Environment?: { Variables?: Record<string, unknown> } }
  }>
  return functions.map((fn) => fn.Properties.Environment?.Variables?.[LOCK_ENV.key])
}

const inlineFunction = (scope: Stack, id: string) =>
  new lambda.Function(scope, id, {
    runtime: lambda.Runtime.NODEJS_24_X,
    handler: 'index.handler',
    code: lambda.Code.fromInline('export const handler = async () => "ok"'),
  })

describe('lock keys: each function gets a stable one through the environment', () => {
  it("is a ScheduledSingletonFunction's construct path by default, not its generated function name", () => {
    const stack = testStack('Jobs')
    const job = new ScheduledSingletonFunction(stack, 'NightlyReport', {
      entry: FIXTURE_ENTRY,
      schedules: hourly,
    })
    expect(job.lockKey).toBe('Jobs/NightlyReport')
    expect(lockKeys(stack)).toEqual(['Jobs/NightlyReport'])
  })

  it("stays when the function is replaced: the key does not follow the function's name", () => {
    const keyWith = (functionName: string | undefined) => {
      const stack = testStack('Jobs')
      new ScheduledSingletonFunction(stack, 'NightlyReport', {
        entry: FIXTURE_ENTRY,
        schedules: hourly,
        functionProps: { functionName },
      })
      return lockKeys(stack)
    }
    expect(keyWith(undefined)).toEqual(keyWith('nightly-report-v2'))
  })

  it("is the wired function's construct path for ScheduledSingleton", () => {
    const stack = testStack('Reporting')
    const wiring = new ScheduledSingleton(stack, 'ReportsSingleton', {
      function: inlineFunction(stack, 'Reports'),
      schedules: hourly,
    })
    expect(wiring.lockKey).toBe('Reporting/Reports')
    expect(lockKeys(stack)).toEqual(['Reporting/Reports'])
  })

  it('is lockKey when given, for either store', () => {
    const stack = testStack()
    const table = new LockTable(stack, 'Table')
    new ScheduledSingletonFunction(stack, 'OnS3', {
      entry: FIXTURE_ENTRY,
      schedules: hourly,
      lockKey: 'billing',
    })
    new ScheduledSingleton(stack, 'OnDynamo', {
      function: inlineFunction(stack, 'Fn'),
      lockTable: table,
      schedules: hourly,
      lockKey: 'invoices/eu',
    })
    expect(lockKeys(stack).sort()).toEqual(['billing', 'invoices/eu'])
  })

  it('lets two stacks in two regions share one lock: the same bucket, the same lockKey', () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } })
    const stackIn = (region: string) => {
      const stack = new Stack(app, `Jobs-${region}`, { env: { account: '111111111111', region } })
      const bucket = s3.Bucket.fromBucketAttributes(stack, 'Shared', {
        bucketName: 'acme-locks',
        region: 'eu-west-1',
      })
      new ScheduledSingletonFunction(stack, 'Compaction', {
        entry: FIXTURE_ENTRY,
        schedules: hourly,
        lockBucket: new LockBucket(stack, 'Locks', { bucket }),
        lockKey: 'compaction',
      })
      return stack
    }
    const lockOf = (stack: Stack) => {
      const [fn] = Object.values(Template.fromStack(stack).findResources('AWS::Lambda::Function')) as Array<{
        Properties: { Environment: { Variables: Record<string, unknown> } }
      }>
      const vars = fn?.Properties.Environment.Variables ?? {}
      return [vars[LOCK_ENV.bucket], vars[LOCK_ENV.keyPrefix], vars[LOCK_ENV.key]]
    }
    const [eu, us] = [stackIn('eu-west-1'), stackIn('us-east-1')]
    expect(lockOf(eu)).toEqual(['acme-locks', 'locks/', 'compaction'])
    expect(lockOf(us)).toEqual(lockOf(eu))
  })

  it('is set by a store’s bind() too, for functions wired by hand', () => {
    const stack = testStack()
    const locks = new LockBucket(stack, 'Locks')
    expect(locks.bind(inlineFunction(stack, 'A'))).toBe('Test/A')
    expect(locks.bind(inlineFunction(stack, 'B'), { lockKey: 'shared' })).toBe('shared')
    expect(lockKeys(stack).sort()).toEqual(['Test/A', 'shared'])
  })

  it.each([
    ['an empty key', '', /lockKey "" is empty/],
    ['a leading slash', '/jobs/a', /starts with "\/"/],
    ['a key over 512 bytes', 'k'.repeat(513), /longer than 512 bytes/],
  ])('refuses %s at synth', (_name, lockKey, message) => {
    const error = thrown(
      () =>
        new ScheduledSingletonFunction(testStack(), 'Job', {
          entry: FIXTURE_ENTRY,
          schedules: hourly,
          lockKey,
        }),
    )
    expect(error).toBeInstanceOf(SingletonValidationError)
    expect(error.message).toMatch(message)
  })
})
