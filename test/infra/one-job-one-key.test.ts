// Issue 27, least privilege per job: a job's role may use its own lock and no other job's, so a
// bug or a compromised dependency in one job cannot park another job's lock ("held until 2100").
import { Duration, type Stack } from 'aws-cdk-lib'
import { Template } from 'aws-cdk-lib/assertions'
import * as ecs from 'aws-cdk-lib/aws-ecs'
import * as iam from 'aws-cdk-lib/aws-iam'
import * as lambda from 'aws-cdk-lib/aws-lambda'
import { ScheduleExpression } from 'aws-cdk-lib/aws-scheduler'
import { describe, expect, it } from 'vitest'
import {
  LockBucket,
  LockTable,
  ScheduledSingleton,
  ScheduledSingletonFunction,
  ScheduledSingletonTask,
  SingletonValidationError,
} from '../../infra/index.js'
import { mayUseLock, roleStatements } from './iam-eval.js'
import { FIXTURE_ENTRY, nagFindings, testStack, thrown } from './support.js'

const hourly = [{ name: 'hourly', expression: ScheduleExpression.rate(Duration.hours(1)) }]
const image = ecs.ContainerImage.fromRegistry('public.ecr.aws/docker/library/node:24-slim')

const idOf = (stack: Stack, construct: { node: { defaultChild?: unknown } }) =>
  stack.getLogicalId(construct.node.defaultChild as never)

const inlineFunction = (scope: Stack, id: string) =>
  new lambda.Function(scope, id, {
    runtime: lambda.Runtime.NODEJS_24_X,
    handler: 'index.handler',
    code: lambda.Code.fromInline('export const handler = async () => "ok"'),
  })

type StoreKind = 's3' | 'dynamodb'

/** A stack with one lock store of `kind`, and how a template request names that store. */
function storeSetup(kind: StoreKind, stackId = 'Jobs') {
  const stack = testStack(stackId)
  if (kind === 's3') {
    const lockBucket = new LockBucket(stack, 'Locks')
    const bucketId = idOf(stack, lockBucket.createdBucket as never)
    return { stack, options: { lockBucket }, store: lockBucket, where: { bucketId } }
  }
  const lockTable = new LockTable(stack, 'Locks')
  const tableId = idOf(stack, lockTable.createdTable as never)
  return { stack, options: { lockTable }, store: lockTable, where: { tableId } }
}

const roleIdOf = (stack: Stack, role: iam.IRole | undefined) => idOf(stack, role as never)

const OWN_AND_NOTHING_ELSE = {
  own: { read: true, write: true },
  other: { read: false, write: false },
}

describe.each(['s3', 'dynamodb'] as const)("one job's role and another job's lock (%s)", (kind) => {
  it("lets a ScheduledSingleton's function read and write its own lock, and not touch another job's", () => {
    const { stack, options, where } = storeSetup(kind)
    const a = new ScheduledSingleton(stack, 'A', {
      function: inlineFunction(stack, 'FnA'),
      schedules: hourly,
      ...options,
    })
    const b = new ScheduledSingleton(stack, 'B', {
      function: inlineFunction(stack, 'FnB'),
      schedules: hourly,
      ...options,
    })
    const template = Template.fromStack(stack)
    const roleA = roleIdOf(stack, a.function.role)
    const roleB = roleIdOf(stack, b.function.role)
    expect({
      own: mayUseLock(template, roleA, where, `locks/${a.lockKey}`),
      other: mayUseLock(template, roleA, where, `locks/${b.lockKey}`),
    }).toEqual(OWN_AND_NOTHING_ELSE)
    expect({
      own: mayUseLock(template, roleB, where, `locks/${b.lockKey}`),
      other: mayUseLock(template, roleB, where, `locks/${a.lockKey}`),
    }).toEqual(OWN_AND_NOTHING_ELSE)
  })

  it('does the same for a fixed lockKey, and for any key the other job might use', () => {
    const { stack, options, where } = storeSetup(kind)
    const report = new ScheduledSingleton(stack, 'Report', {
      function: inlineFunction(stack, 'ReportFn'),
      schedules: hourly,
      lockKey: 'nightly-report',
      ...options,
    })
    const template = Template.fromStack(stack)
    const role = roleIdOf(stack, report.function.role)
    expect(mayUseLock(template, role, where, 'locks/nightly-report')).toEqual({ read: true, write: true })
    for (const key of [
      'locks/billing',
      'locks/nightly-report-2',
      'locks/nightly-report/x',
      'other/nightly-report',
    ]) {
      expect(mayUseLock(template, role, where, key), key).toEqual({ read: false, write: false })
    }
  })

  it("lets a ScheduledSingletonFunction's role use its own lock only", () => {
    const { stack, options, where } = storeSetup(kind)
    const sync = new ScheduledSingletonFunction(stack, 'Sync', {
      entry: FIXTURE_ENTRY,
      schedules: hourly,
      ...options,
    })
    const billing = new ScheduledSingletonFunction(stack, 'Billing', {
      entry: FIXTURE_ENTRY,
      schedules: hourly,
      lockKey: 'billing',
      ...options,
    })
    const template = Template.fromStack(stack)
    const syncRole = roleIdOf(stack, sync.function.role)
    expect({
      own: mayUseLock(template, syncRole, where, 'locks/Jobs/Sync'),
      other: mayUseLock(template, syncRole, where, 'locks/billing'),
    }).toEqual(OWN_AND_NOTHING_ELSE)
    const billingRole = roleIdOf(stack, billing.function.role)
    expect({
      own: mayUseLock(template, billingRole, where, 'locks/billing'),
      other: mayUseLock(template, billingRole, where, 'locks/Jobs/Sync'),
    }).toEqual(OWN_AND_NOTHING_ELSE)
  })

  it("lets a ScheduledSingletonTask's task role use its own lock only, beside a function on the same store", () => {
    const { stack, options, where } = storeSetup(kind)
    const task = new ScheduledSingletonTask(stack, 'Rebuild', {
      image,
      command: ['node', 'rebuild.js'],
      schedules: hourly,
      lockKey: 'rebuild-index',
      ...options,
    })
    new ScheduledSingletonFunction(stack, 'Report', { entry: FIXTURE_ENTRY, schedules: hourly, ...options })
    const template = Template.fromStack(stack)
    const role = roleIdOf(stack, task.taskDefinition.taskRole)
    expect({
      own: mayUseLock(template, role, where, 'locks/rebuild-index'),
      other: mayUseLock(template, role, where, 'locks/Jobs/Report'),
    }).toEqual(OWN_AND_NOTHING_ELSE)
  })

  it("lets a store's bind() grant the bound function's key only", () => {
    const { stack, store, where } = storeSetup(kind)
    const fn = inlineFunction(stack, 'Fn')
    store.bind(fn, { lockKey: 'compaction' })
    const template = Template.fromStack(stack)
    const role = roleIdOf(stack, fn.role)
    expect({
      own: mayUseLock(template, role, where, 'locks/compaction'),
      other: mayUseLock(template, role, where, 'locks/billing'),
    }).toEqual(OWN_AND_NOTHING_ELSE)
  })

  it('gives a function whose keys are chosen at run time the patterns of lockKeys, its own key to read only, and nothing else', () => {
    const { stack, options, where } = storeSetup(kind)
    const sync = new ScheduledSingletonFunction(stack, 'TenantSync', {
      entry: FIXTURE_ENTRY,
      schedules: hourly,
      lockKeys: ['tenant-sync/*'],
      ...options,
    })
    new ScheduledSingletonFunction(stack, 'Report', {
      entry: FIXTURE_ENTRY,
      schedules: hourly,
      lockKey: 'report',
      ...options,
    })
    const template = Template.fromStack(stack)
    const role = roleIdOf(stack, sync.function.role)
    expect(mayUseLock(template, role, where, 'locks/tenant-sync/acme')).toEqual({ read: true, write: true })
    expect(mayUseLock(template, role, where, 'locks/tenant-sync/globex')).toEqual({ read: true, write: true })
    expect(mayUseLock(template, role, where, 'locks/report')).toEqual({ read: false, write: false })
    // The runtime reads the store's clock at INIT from the function's own key (LAMBDA_SINGLETON_KEY),
    // whatever key its runs lock: it may read that key, and write it only if lockKeys lists it.
    expect(mayUseLock(template, role, where, 'locks/Jobs/TenantSync')).toEqual({ read: true, write: false })
    expect(mayUseLock(template, role, where, 'locks/Jobs/TenantSync2')).toEqual({ read: false, write: false })
    // The pattern's wildcard is acknowledged where it is granted; nothing else is.
    expect(nagFindings(stack).filter((f) => f.rule.startsWith('AwsSolutions-IAM5'))).toEqual([])
  })

  it("lets lockKeys: ['*'] opt into the whole prefix, the wide grant()", () => {
    const { stack, options, where } = storeSetup(kind)
    const wide = new ScheduledSingleton(stack, 'Wide', {
      function: inlineFunction(stack, 'Fn'),
      schedules: hourly,
      lockKeys: ['*'],
      ...options,
    })
    const template = Template.fromStack(stack)
    const role = roleIdOf(stack, wide.function.role)
    expect(mayUseLock(template, role, where, 'locks/anything/at/all')).toEqual({ read: true, write: true })
    expect(mayUseLock(template, role, where, `locks/${wide.lockKey}`)).toEqual({ read: true, write: true })
    expect(mayUseLock(template, role, where, 'elsewhere/x')).toEqual({ read: false, write: false })
  })

  it('adds no read of its own key beside lockKeys that already cover it', () => {
    const { stack, store, where } = storeSetup(kind)
    const fn = inlineFunction(stack, 'Fn')
    store.bind(fn, { lockKey: 'report', lockKeys: ['report', 'report/*'] })
    const template = Template.fromStack(stack)
    const role = roleIdOf(stack, fn.role)
    expect(mayUseLock(template, role, where, 'locks/report')).toEqual({ read: true, write: true })
    const lockStatements = roleStatements(template, role).filter((s) =>
      [s.Action ?? []].flat().some((a) => /^(s3|dynamodb):/.test(a)),
    )
    expect(lockStatements).toHaveLength(1)
  })

  it("lets grantKeys() give any role (a container's) the keys that match its patterns, and no other", () => {
    const { stack, store, where } = storeSetup(kind)
    const worker = new iam.Role(stack, 'Worker', {
      assumedBy: new iam.ServicePrincipal('ecs-tasks.amazonaws.com'),
    })
    store.grantKeys(worker, ['import/eu-?', 'import/us'])
    const template = Template.fromStack(stack)
    const role = roleIdOf(stack, worker)
    for (const key of ['locks/import/eu-1', 'locks/import/us']) {
      expect(mayUseLock(template, role, where, key), key).toEqual({ read: true, write: true })
    }
    for (const key of ['locks/import/eu-12', 'locks/import/usa', 'locks/report']) {
      expect(mayUseLock(template, role, where, key), key).toEqual({ read: false, write: false })
    }
  })

  it('keeps grant() the wide one, for roles wired by hand: every key under the prefix, nothing outside', () => {
    const { stack, store, where } = storeSetup(kind)
    const operator = new iam.Role(stack, 'Operator', { assumedBy: new iam.AccountRootPrincipal() })
    store.grant(operator)
    const template = Template.fromStack(stack)
    const role = roleIdOf(stack, operator)
    expect(mayUseLock(template, role, where, 'locks/any-job')).toEqual({ read: true, write: true })
    expect(mayUseLock(template, role, where, 'data/x')).toEqual({ read: false, write: false })
  })
})

describe('lockKeys and lockKey are checked at synth', () => {
  it.each([
    ['an empty list', [], /lockKeys is empty/],
    ['an empty pattern', [''], /lockKeys entry "" is empty/],
    ['a leading slash', ['/tenant-*'], /starts with "\/"/],
    ['a pattern over 512 bytes', ['k'.repeat(513)], /longer than 512 bytes/],
  ])('refuses lockKeys with %s', (_name, lockKeys, message) => {
    const error = thrown(
      () =>
        new ScheduledSingletonFunction(testStack(), 'Job', {
          entry: FIXTURE_ENTRY,
          schedules: hourly,
          lockKeys,
        }),
    )
    expect(error).toBeInstanceOf(SingletonValidationError)
    expect(error.message).toMatch(message)
  })

  it.each(['tenant-*', 'job?'])(
    'refuses a lockKey with a policy wildcard (%s): it would grant more than one key',
    (lockKey) => {
      const error = thrown(
        () =>
          new ScheduledSingletonFunction(testStack(), 'Job', {
            entry: FIXTURE_ENTRY,
            schedules: hourly,
            lockKey,
          }),
      )
      expect(error).toBeInstanceOf(SingletonValidationError)
      expect(error.message).toMatch(/wildcard.*lockKeys/)
    },
  )
})
