/**
 * What the constructs synthesize for one scheduled singleton function, in the canonical form of
 * ./policies.ts: the function role's statements, the lock bucket's policy, the Scheduler role,
 * the schedule's target and the function's lock environment.
 */
import { Duration } from 'aws-cdk-lib'
import { Template } from 'aws-cdk-lib/assertions'
import * as kms from 'aws-cdk-lib/aws-kms'
import { ScheduleExpression } from 'aws-cdk-lib/aws-scheduler'
import { LockBucket, LockTable, ScheduledSingletonFunction } from '../../../infra/index.js'
import { FIXTURE_ENTRY, testStack } from '../../infra/support.js'
import { canonical, type Role, resolveCloudFormation, type Statement } from './policies.js'

type Json = Parameters<typeof canonical>[0]
type Resource = { Type: string; Properties: Record<string, Json> }

export interface Synthesized {
  readonly functionRole: readonly Statement[]
  readonly bucketPolicy: readonly Statement[]
  readonly schedulerTrust: readonly Statement[]
  readonly schedulerPolicy: readonly Statement[]
  readonly scheduleTarget: { readonly input: Json; readonly retryPolicy: Json }
  readonly flexibleTimeWindow: Json
  /** The function's `LAMBDA_SINGLETON_*` variables. */
  readonly environment: Readonly<Record<string, string>>
}

export const Variant = { S3: 's3', DynamoDB: 'dynamodb', S3WithKmsKey: 's3-kms' } as const
export type Variant = (typeof Variant)[keyof typeof Variant]

const ROLE_OF_TYPE: Record<string, Role> = {
  'AWS::S3::Bucket': 'LockBucket',
  'AWS::DynamoDB::Table': 'LockTable',
  'AWS::Lambda::Function': 'Function',
  'AWS::Logs::LogGroup': 'LogGroup',
  'AWS::KMS::Key': 'Key',
}

/** One function on the `nightly` schedule of the docs, with its lock in a bucket or a table. */
export function synthesize(variant: Variant): Synthesized {
  const stack = testStack()
  const lockStore =
    variant === Variant.DynamoDB
      ? { lockTable: new LockTable(stack, 'Locks') }
      : {
          lockBucket: new LockBucket(stack, 'Locks', {
            bucketProps: variant === Variant.S3WithKmsKey ? { encryptionKey: new kms.Key(stack, 'Key') } : {},
          }),
        }
  new ScheduledSingletonFunction(stack, 'NightlyReport', {
    entry: FIXTURE_ENTRY,
    lockKey: 'nightly-report',
    timeout: Duration.minutes(5),
    schedules: [{ name: 'nightly', expression: ScheduleExpression.cron({ hour: '3', minute: '0' }) }],
    ...lockStore,
  })
  const resources = Template.fromStack(stack).toJSON().Resources as Record<string, Resource>
  const roles: Record<string, Role> = {}
  for (const [id, resource] of Object.entries(resources)) {
    const role = ROLE_OF_TYPE[resource.Type]
    if (role) roles[id] = role
  }
  const resolve = (value: Json) => resolveCloudFormation(value, roles)
  const ofType = (type: string) => Object.entries(resources).filter(([, r]) => r.Type === type)
  const statementsOf = (document: Json) =>
    ((document as { Statement: Json[] }).Statement ?? []).map((s) => canonical(resolve(s)))

  const [, fn] = one('function', ofType('AWS::Lambda::Function'))
  const roleId = (fn.Properties.Role as { 'Fn::GetAtt': [string] })['Fn::GetAtt'][0]
  const [schedulerRoleId, schedulerRole] = one(
    'Scheduler role',
    ofType('AWS::IAM::Role').filter(([, r]) =>
      JSON.stringify(r.Properties).includes('scheduler.amazonaws.com'),
    ),
  )
  const policyOf = (role: string) =>
    one(
      `policy of ${role}`,
      ofType('AWS::IAM::Policy').filter(([, r]) => JSON.stringify(r.Properties.Roles).includes(`"${role}"`)),
    )[1]
  const [, schedule] = one('schedule', ofType('AWS::Scheduler::Schedule'))
  const target = schedule.Properties.Target as Record<string, Json>
  const variables = ((fn.Properties.Environment as Record<string, Json>).Variables ?? {}) as Record<
    string,
    Json
  >
  const bucketPolicies = ofType('AWS::S3::BucketPolicy')

  return {
    functionRole: statementsOf(policyOf(roleId).Properties.PolicyDocument as Json),
    bucketPolicy: bucketPolicies.flatMap(([, r]) => statementsOf(r.Properties.PolicyDocument as Json)),
    schedulerTrust: statementsOf(schedulerRole.Properties.AssumeRolePolicyDocument as Json),
    schedulerPolicy: statementsOf(policyOf(schedulerRoleId).Properties.PolicyDocument as Json),
    scheduleTarget: { input: JSON.parse(String(target.Input)), retryPolicy: target.RetryPolicy as Json },
    flexibleTimeWindow: schedule.Properties.FlexibleTimeWindow as Json,
    environment: Object.fromEntries(
      Object.entries(variables)
        .filter(([name]) => name.startsWith('LAMBDA_SINGLETON_'))
        .map(([name, value]) => [name, String(resolve(value))]),
    ),
  }
}

function one<T>(what: string, found: T[]): T {
  if (found.length !== 1) throw new Error(`expected one ${what} in the template, found ${found.length}`)
  return found[0] as T
}
