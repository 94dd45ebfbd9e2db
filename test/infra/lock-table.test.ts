import { Duration, Errors, RemovalPolicy, type Stack } from 'aws-cdk-lib'
import { Match, Template } from 'aws-cdk-lib/assertions'
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb'
import * as iam from 'aws-cdk-lib/aws-iam'
import * as kms from 'aws-cdk-lib/aws-kms'
import * as lambda from 'aws-cdk-lib/aws-lambda'
import { ScheduleExpression } from 'aws-cdk-lib/aws-scheduler'
import { describe, expect, it } from 'vitest'
import {
  LockBucket,
  LockTable,
  ScheduledSingleton,
  ScheduledSingletonFunction,
  SingletonValidationError,
} from '../../infra/index.js'
import { TABLE_LOCK_ACTIONS } from '../../infra/lock-table.js'
import { LOCK_ENV } from '../../lib/config.js'
import {
  FIXTURE_ENTRY,
  nagAcknowledgements,
  nagFindings,
  rawNagFindings,
  testStack,
  thrown,
} from './support.js'

type Statement = Record<string, unknown>

const worker = (stack: Stack, id = 'Worker') =>
  new iam.Role(stack, id, { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com') })

const logicalId = (stack: Stack, construct: { node: { defaultChild?: unknown } }) =>
  stack.getLogicalId(construct.node.defaultChild as never)

/** Every statement of every IAM policy in the template. */
function statementsOf(template: Template): Statement[] {
  return Object.values(template.findResources('AWS::IAM::Policy')).flatMap(
    (policy) =>
      (policy as { Properties: { PolicyDocument: { Statement: Statement[] } } }).Properties.PolicyDocument
        .Statement,
  )
}

/** The lock statement `grant()` adds, for a table ARN and a key prefix. */
const lockStatement = (tableArn: unknown, prefix: string) => ({
  Effect: 'Allow',
  Action: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
  Resource: tableArn,
  Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': `${prefix}*` } },
})

/** The lock statement `bind()` and `grantKey()` add: one item, the function's own key. */
const keyStatement = (tableArn: unknown, key: string) => ({
  Effect: 'Allow',
  Action: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
  Resource: tableArn,
  Condition: { 'ForAllValues:StringEquals': { 'dynamodb:LeadingKeys': [key] } },
})

/** A fresh, never-mutated `lambda.Function` to bind to. */
function plainFunction(stack: Stack): lambda.Function {
  return new lambda.Function(stack, 'Fn', {
    runtime: lambda.Runtime.NODEJS_24_X,
    handler: 'index.handler',
    code: lambda.Code.fromInline('export const handler = async () => "ok"'),
    environment: { KEEP: 'me' },
  })
}

/** A stack with a default LockTable and a role granted on it, shared by the read-only tests. */
function defaultSetup() {
  const stack = testStack()
  const locks = new LockTable(stack, 'Locks')
  locks.grant(worker(stack))
  return { stack, locks, template: Template.fromStack(stack) }
}

const shared = defaultSetup()
const tableId = logicalId(shared.stack, shared.locks.createdTable as dynamodb.Table)
const tableArn = { 'Fn::GetAtt': [tableId, 'Arn'] }

describe('LockTable: a created table', () => {
  it('has a string partition key `pk` and nothing else in its key schema', () => {
    expect(shared.locks.partitionKey).toBe('pk')
    expect(shared.locks.keyPrefix).toBe('locks/')
    expect(shared.locks.table).toBe(shared.locks.createdTable)
    shared.template.resourceCountIs('AWS::DynamoDB::Table', 1)
    shared.template.hasResourceProperties('AWS::DynamoDB::Table', {
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
    })
  })

  it('bills on demand, with point-in-time recovery, deletion protection and an AWS owned key', () => {
    shared.template.hasResourceProperties('AWS::DynamoDB::Table', {
      BillingMode: 'PAY_PER_REQUEST',
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      DeletionProtectionEnabled: true,
      // SSEEnabled false is DynamoDB's way of saying "encrypted with an AWS owned key".
      SSESpecification: { SSEEnabled: false },
      ProvisionedThroughput: Match.absent(),
      TimeToLiveSpecification: Match.absent(),
    })
  })

  it('is retained by default: deleting lock records would reset every fencing token', () => {
    shared.template.hasResource('AWS::DynamoDB::Table', {
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
    })
  })

  it('takes a partition key name, a table name, and turns protections off only when told', () => {
    const stack = testStack()
    const locks = new LockTable(stack, 'Locks', {
      partitionKey: 'lockKey',
      tableName: 'my-locks',
      pointInTimeRecovery: false,
      deletionProtection: false,
      removalPolicy: RemovalPolicy.DESTROY,
    })
    expect(locks.partitionKey).toBe('lockKey')
    Template.fromStack(stack).hasResource('AWS::DynamoDB::Table', {
      DeletionPolicy: 'Delete',
      Properties: Match.objectLike({
        TableName: 'my-locks',
        KeySchema: [{ AttributeName: 'lockKey', KeyType: 'HASH' }],
        AttributeDefinitions: [{ AttributeName: 'lockKey', AttributeType: 'S' }],
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: false },
        DeletionProtectionEnabled: false,
        BillingMode: 'PAY_PER_REQUEST',
      }),
    })
  })

  it('is encrypted with a given customer managed key', () => {
    const stack = testStack()
    const key = new kms.Key(stack, 'Key', { enableKeyRotation: true })
    const locks = new LockTable(stack, 'Locks', { encryptionKey: key })
    expect(locks.table.encryptionKey).toBe(key)
    Template.fromStack(stack).hasResourceProperties('AWS::DynamoDB::Table', {
      SSESpecification: {
        SSEEnabled: true,
        SSEType: 'KMS',
        KMSMasterKeyId: { 'Fn::GetAtt': [logicalId(stack, key), 'Arn'] },
      },
    })
  })

  it('can use the AWS managed key instead', () => {
    const stack = testStack()
    new LockTable(stack, 'Locks', { encryption: dynamodb.TableEncryption.AWS_MANAGED })
    const template = Template.fromStack(stack)
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      // SSEType defaults to KMS when SSE is enabled; no key id means the `aws/dynamodb` key.
      SSESpecification: { SSEEnabled: true, KMSMasterKeyId: Match.absent() },
    })
    template.resourceCountIs('AWS::KMS::Key', 0)
  })
})

describe('LockTable.grant()', () => {
  it('gives exactly GetItem, PutItem and UpdateItem (all the store sends) on the table, for partition keys under the prefix', () => {
    expect(statementsOf(shared.template)).toEqual([lockStatement(tableArn, 'locks/')])
    expect([...TABLE_LOCK_ACTIONS]).toEqual(['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'])
  })

  it('follows a custom prefix in the LeadingKeys condition', () => {
    const stack = testStack()
    const locks = new LockTable(stack, 'Locks', { keyPrefix: 'jobs/locks/' })
    locks.grant(worker(stack))
    const arn = { 'Fn::GetAtt': [logicalId(stack, locks.createdTable as dynamodb.Table), 'Arn'] }
    expect(statementsOf(Template.fromStack(stack))).toEqual([lockStatement(arn, 'jobs/locks/')])
  })

  it('adds the use of a customer managed key, on that key only', () => {
    const stack = testStack()
    const key = new kms.Key(stack, 'Key', { enableKeyRotation: true })
    const locks = new LockTable(stack, 'Locks', { encryptionKey: key })
    locks.grant(worker(stack))
    const arn = { 'Fn::GetAtt': [logicalId(stack, locks.createdTable as dynamodb.Table), 'Arn'] }
    expect(statementsOf(Template.fromStack(stack))).toEqual([
      lockStatement(arn, 'locks/'),
      {
        Effect: 'Allow',
        Action: ['kms:Decrypt', 'kms:DescribeKey', 'kms:Encrypt', 'kms:ReEncrypt*', 'kms:GenerateDataKey*'],
        Resource: { 'Fn::GetAtt': [logicalId(stack, key), 'Arn'] },
      },
    ])
  })
})

describe('LockTable.bind()', () => {
  it('sets the table name and key prefix, no bucket and no partition key when it is `pk`', () => {
    const stack = testStack()
    const locks = new LockTable(stack, 'Locks')
    const fn = plainFunction(stack)
    locks.bind(fn)
    const template = Template.fromStack(stack)
    const id = logicalId(stack, locks.createdTable as dynamodb.Table)
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: {
        Variables: { KEEP: 'me', [LOCK_ENV.table]: { Ref: id }, [LOCK_ENV.keyPrefix]: 'locks/' },
      },
    })
    expect(statementsOf(template)).toEqual([keyStatement({ 'Fn::GetAtt': [id, 'Arn'] }, 'locks/Test/Fn')])
  })

  it('tells the function a partition key that is not `pk`', () => {
    const stack = testStack()
    const locks = new LockTable(stack, 'Locks', { partitionKey: 'id', keyPrefix: 'mutex/' })
    locks.bind(plainFunction(stack))
    Template.fromStack(stack).hasResourceProperties('AWS::Lambda::Function', {
      Environment: {
        Variables: {
          KEEP: 'me',
          [LOCK_ENV.table]: { Ref: logicalId(stack, locks.createdTable as dynamodb.Table) },
          [LOCK_ENV.keyPrefix]: 'mutex/',
          [LOCK_ENV.partitionKey]: 'id',
        },
      },
    })
  })
})

describe('LockTable on an existing table', () => {
  it('uses a Table of the same app and creates nothing', () => {
    const stack = testStack()
    const table = new dynamodb.Table(stack, 'Existing', {
      partitionKey: { name: 'PK', type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    })
    const locks = new LockTable(stack, 'Locks', { table, partitionKey: 'PK', keyPrefix: 'lock#' })
    expect(locks.table).toBe(table)
    expect(locks.createdTable).toBeUndefined()
    expect(locks.node.children).toHaveLength(0)
    locks.bind(plainFunction(stack))
    const template = Template.fromStack(stack)
    template.resourceCountIs('AWS::DynamoDB::Table', 1)
    const arn = { 'Fn::GetAtt': [logicalId(stack, table), 'Arn'] }
    expect(statementsOf(template)).toEqual([keyStatement(arn, 'lock#Test/Fn')])
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: {
        Variables: Match.objectLike({
          [LOCK_ENV.table]: { Ref: logicalId(stack, table) },
          [LOCK_ENV.partitionKey]: 'PK',
        }),
      },
    })
  })

  it('uses an imported TableV2 by name', () => {
    const stack = testStack()
    const table = dynamodb.TableV2.fromTableName(stack, 'Imported', 'shared-locks')
    const locks = new LockTable(stack, 'Locks', { table })
    locks.bind(plainFunction(stack))
    const template = Template.fromStack(stack)
    template.resourceCountIs('AWS::DynamoDB::Table', 0)
    template.resourceCountIs('AWS::DynamoDB::GlobalTable', 0)
    const arn = {
      'Fn::Join': [
        '',
        ['arn:', { Ref: 'AWS::Partition' }, ':dynamodb:eu-west-1:111111111111:table/shared-locks'],
      ],
    }
    expect(statementsOf(template)).toEqual([keyStatement(arn, 'locks/Test/Fn')])
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ [LOCK_ENV.table]: 'shared-locks' }) },
    })
  })
})

describe('ScheduledSingletonFunction and ScheduledSingleton with a LockTable', () => {
  function functionSetup() {
    const stack = testStack()
    const lockTable = new LockTable(stack, 'Locks', { partitionKey: 'lock_id' })
    const job = new ScheduledSingletonFunction(stack, 'Job', {
      entry: FIXTURE_ENTRY,
      lockTable,
      schedules: [{ name: 'nightly', expression: ScheduleExpression.cron({ minute: '0', hour: '3' }) }],
      functionProps: { environment: { STAGE: 'test' } },
    })
    return { stack, lockTable, job, template: Template.fromStack(stack) }
  }
  const fnSetup = functionSetup()
  const fnTableId = logicalId(fnSetup.stack, fnSetup.lockTable.createdTable as dynamodb.Table)

  it('gives the function the table environment and no bucket', () => {
    const { job, lockTable, template } = fnSetup
    expect(job.singleton.lockTable).toBe(lockTable)
    expect(job.singleton.lockStore).toBe(lockTable)
    expect(job.singleton.lockBucket).toBeUndefined()
    template.resourceCountIs('AWS::S3::Bucket', 0)
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: {
        Variables: {
          [LOCK_ENV.store]: 'dynamodb',
          [LOCK_ENV.table]: { Ref: fnTableId },
          [LOCK_ENV.keyPrefix]: 'locks/',
          [LOCK_ENV.partitionKey]: 'lock_id',
          NODE_OPTIONS: '--enable-source-maps',
          STAGE: 'test',
        },
      },
    })
  })

  it('lets its role write its logs and use the lock table, nothing else', () => {
    const { stack, job, template } = fnSetup
    const roleId = logicalId(stack, job.function.role as unknown as { node: { defaultChild?: unknown } })
    const logGroupId = logicalId(stack, job.logGroup as unknown as { node: { defaultChild?: unknown } })
    template.hasResourceProperties('AWS::IAM::Policy', {
      Roles: [{ Ref: roleId }],
      PolicyDocument: {
        Statement: [
          {
            Effect: 'Allow',
            Action: ['logs:CreateLogStream', 'logs:PutLogEvents'],
            Resource: { 'Fn::GetAtt': [logGroupId, 'Arn'] },
          },
          keyStatement({ 'Fn::GetAtt': [fnTableId, 'Arn'] }, 'locks/Test/Job'),
        ],
      },
    })
  })

  it('has no unacknowledged AwsSolutions finding, and acknowledges only findings that exist', () => {
    expect(nagFindings(fnSetup.stack)).toEqual([])
    const raw = rawNagFindings(fnSetup.stack)
    for (const ack of nagAcknowledgements(fnSetup.stack)) {
      expect(ack.reason.length).toBeGreaterThan(40)
      expect(raw.some((f) => f.rule === ack.rule && f.path.startsWith(`${ack.path}/`))).toBe(true)
    }
  })

  it('wires an existing function to a LockTable through ScheduledSingleton', () => {
    const stack = testStack()
    const fn = plainFunction(stack)
    const lockTable = new LockTable(stack, 'Locks', { keyPrefix: 'mutex/' })
    const wiring = new ScheduledSingleton(stack, 'Singleton', {
      function: fn,
      lockTable,
      schedules: [{ name: 'every-5', expression: ScheduleExpression.rate(Duration.minutes(5)) }],
    })
    expect(wiring.lockStore).toBe(lockTable)
    expect(wiring.lockBucket).toBeUndefined()
    const template = Template.fromStack(stack)
    const id = logicalId(stack, lockTable.createdTable as dynamodb.Table)
    template.resourceCountIs('AWS::S3::Bucket', 0)
    template.resourceCountIs('AWS::Scheduler::Schedule', 1)
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: {
        Variables: { KEEP: 'me', [LOCK_ENV.table]: { Ref: id }, [LOCK_ENV.keyPrefix]: 'mutex/' },
      },
    })
    template.hasResourceProperties('AWS::IAM::Policy', {
      PolicyDocument: {
        Statement: Match.arrayWith([keyStatement({ 'Fn::GetAtt': [id, 'Arn'] }, 'mutex/Test/Fn')]),
      },
    })
  })

  it('still creates a LockBucket when given neither', () => {
    const stack = testStack()
    const wiring = new ScheduledSingleton(stack, 'Singleton', {
      function: plainFunction(stack),
      schedules: [{ name: 'every-5', expression: ScheduleExpression.rate(Duration.minutes(5)) }],
    })
    expect(wiring.lockBucket).toBeInstanceOf(LockBucket)
    expect(wiring.lockStore).toBe(wiring.lockBucket)
    expect(wiring.lockTable).toBeUndefined()
    Template.fromStack(stack).resourceCountIs('AWS::S3::Bucket', 1)
  })
})

describe('LockTable and cdk-nag', () => {
  it('raises no AwsSolutions finding at all with the defaults, so acknowledges nothing', () => {
    expect(rawNagFindings(shared.stack)).toEqual([])
    expect(nagAcknowledgements(shared.stack)).toEqual([])
  })

  it('acknowledges, with a reason, only the two wildcard KMS actions of a customer managed key', () => {
    const stack = testStack()
    const key = new kms.Key(stack, 'Key', { enableKeyRotation: true })
    new LockTable(stack, 'Locks', { encryptionKey: key }).grant(worker(stack))
    expect(nagFindings(stack)).toEqual([])
    expect(rawNagFindings(stack)).toEqual([
      { rule: 'AwsSolutions-IAM5[Action::kms:ReEncrypt*]', path: 'Test/Worker/DefaultPolicy/Resource' },
      { rule: 'AwsSolutions-IAM5[Action::kms:GenerateDataKey*]', path: 'Test/Worker/DefaultPolicy/Resource' },
    ])
    const acks = nagAcknowledgements(stack)
    expect(acks.map((a) => [a.rule, a.path])).toEqual([
      ['AwsSolutions-IAM5[Action::kms:ReEncrypt*]', 'Test/Worker'],
      ['AwsSolutions-IAM5[Action::kms:GenerateDataKey*]', 'Test/Worker'],
    ])
  })

  it('leaves AwsSolutions-DDB3 to the user who turns point-in-time recovery off', () => {
    const stack = testStack()
    new LockTable(stack, 'Locks', { pointInTimeRecovery: false })
    expect(nagFindings(stack)).toEqual([{ rule: 'AwsSolutions-DDB3', path: 'Test/Locks/Table/Resource' }])
  })
})

describe('LockTable validation', () => {
  const existing = (s: Stack) => dynamodb.Table.fromTableName(s, 'Existing', 'mine')
  const cases: Array<[string, (stack: Stack) => void, RegExp, string?]> = [
    [
      'a prefix that runs into the lock name',
      (s) => new LockTable(s, 'L', { keyPrefix: 'locks' }),
      /runs into the lock's name/,
    ],
    ['an empty prefix', (s) => new LockTable(s, 'L', { keyPrefix: '' }), /LockTable: keyPrefix "" is empty/],
    ['a * in the prefix', (s) => new LockTable(s, 'L', { keyPrefix: 'locks/*' }), /wildcards/],
    ['a ? in the prefix', (s) => new LockTable(s, 'L', { keyPrefix: 'lock?' }), /wildcards/],
    [
      'a prefix too long',
      (s) => new LockTable(s, 'L', { keyPrefix: `${'x'.repeat(1024)}#` }),
      /longer than 1024/,
    ],
    ['an empty partition key', (s) => new LockTable(s, 'L', { partitionKey: '' }), /partitionKey "" must be/],
    [
      'both table and tableName',
      (s) => new LockTable(s, 'L', { table: existing(s), tableName: 'other' }),
      /`tableName` only apply to a table this construct creates/,
    ],
    [
      'both table and removalPolicy, deletionProtection',
      (s) =>
        new LockTable(s, 'L', {
          table: existing(s),
          removalPolicy: RemovalPolicy.DESTROY,
          deletionProtection: false,
        }),
      /`deletionProtection`, `removalPolicy` only apply/,
    ],
    [
      'both table and encryptionKey',
      (s) => new LockTable(s, 'L', { table: existing(s), encryptionKey: new kms.Key(s, 'K') }),
      /`encryptionKey` only apply/,
    ],
    [
      'an encryptionKey with AWS managed encryption',
      (s) =>
        new LockTable(s, 'L', {
          encryption: dynamodb.TableEncryption.AWS_MANAGED,
          encryptionKey: new kms.Key(s, 'K'),
        }),
      /`encryptionKey` needs `encryption` CUSTOMER_MANAGED/,
    ],
    [
      'both lockBucket and lockTable on ScheduledSingletonFunction',
      (s) =>
        new ScheduledSingletonFunction(s, 'L', {
          entry: FIXTURE_ENTRY,
          lockBucket: new LockBucket(s, 'Bucket'),
          lockTable: new LockTable(s, 'Table'),
          schedules: [{ name: 'tick', expression: ScheduleExpression.rate(Duration.minutes(5)) }],
        }),
      /either `lockBucket` \(S3\) or `lockTable` \(DynamoDB\)/,
      'Test/L/Singleton',
    ],
    [
      'a partition key named like a field of the lock record',
      (s) => new LockTable(s, 'L', { partitionKey: 'owner' }),
      /partitionKey cannot be "owner": "owner" is a field of the lock record/,
    ],
  ]

  it.each(cases)('refuses %s at synth with a ValidationError', (_name, build, message, path = 'Test/L') => {
    const error = thrown(() => build(testStack()))
    expect(error).toBeInstanceOf(SingletonValidationError)
    expect(error.name).toBe('ValidationError')
    expect(error.message).toMatch(message)
    expect(error.message).toContain(`(at ${path})`)
    expect(Errors.isValidationError(error)).toBe(true)
  })

  it('accepts the edges: a one-character prefix without a slash, a 1024-character prefix', () => {
    expect(() => new LockTable(testStack(), 'L', { keyPrefix: '#' })).not.toThrow()
    expect(() => new LockTable(testStack(), 'L', { keyPrefix: `${'x'.repeat(1023)}#` })).not.toThrow()
  })
})
