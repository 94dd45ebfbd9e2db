// docs/without-cdk.md: its IAM policies, bucket policy, Scheduler settings, SAM template and
// Terraform module (examples/without-cdk/) grant and send exactly what the constructs
// synthesize, so that the two cannot drift apart.
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { beforeAll, describe, expect, it } from 'vitest'
import { parse as parseYaml, type Tags } from 'yaml'
import { ESM_REQUIRE_BANNER } from '../../infra/scheduled-singleton-function.js'
import {
  canonical,
  canonicalTerraform,
  resolveCloudFormation,
  type Statement,
  terraformResolver,
} from './support/policies.js'
import { type Synthesized, synthesize, Variant } from './support/synth.js'

type Json = Parameters<typeof canonical>[0]
type Tree = Record<string, Json>

// Loaded untyped: its declarations pull the DOM lib into the whole type check.
const hcl2json = createRequire(import.meta.url)('@cdktf/hcl2json') as {
  parse(filename: string, contents: string): Promise<Tree>
}

const dir = fileURLToPath(new URL('../../examples/without-cdk/', import.meta.url))
const read = (name: string) => readFileSync(`${dir}${name}`, 'utf8')
const json = (name: string) => JSON.parse(read(name)) as Tree
const statements = (document: Json) => ((document as Tree).Statement as Json[]).map(canonical)
/** Statements compared as sets: their order means nothing to IAM. */
const sorted = (list: readonly Statement[]) => [...list].map((s) => JSON.stringify(s)).sort()

let s3: Synthesized
let dynamodb: Synthesized
let withKey: Synthesized
beforeAll(() => {
  s3 = synthesize(Variant.S3)
  dynamodb = synthesize(Variant.DynamoDB)
  withKey = synthesize(Variant.S3WithKmsKey)
}, 120_000)

describe('the policies for a deployment without CDK', () => {
  it('give the function exactly what the construct grants it: its logs and the lock prefix', () => {
    expect(sorted(statements(json('lock-role-policy.json')))).toEqual(sorted(s3.functionRole))
  })

  it('give a function whose locks are in DynamoDB the same, with the table statement', () => {
    expect(sorted(statements(json('lock-role-policy-dynamodb.json')))).toEqual(sorted(dynamodb.functionRole))
  })

  it('add, for a bucket with its own KMS key, the one statement the construct adds', () => {
    const extra = withKey.functionRole.filter((s) => !sorted(s3.functionRole).includes(JSON.stringify(s)))
    expect(extra).toEqual([canonical(json('lock-key-statement.json'))])
  })

  it('put on the lock bucket the policy the construct puts on a bucket it creates', () => {
    expect(sorted(statements(json('lock-bucket-policy.json')))).toEqual(sorted(s3.bucketPolicy))
  })

  it('let only Scheduler of this account and group assume the invoke role, which may invoke the function', () => {
    expect(statements(json('scheduler-role-trust.json'))).toEqual(s3.schedulerTrust)
    expect(statements(json('scheduler-role-policy.json'))).toEqual(s3.schedulerPolicy)
  })

  it("send the construct's Scheduler payload, with its retry policy", () => {
    const target = json('schedule-target.json')
    expect(JSON.parse(String(target.Input))).toEqual(s3.scheduleTarget.input)
    expect(target.RetryPolicy).toEqual(s3.scheduleTarget.retryPolicy)
  })
})

describe('the SAM template', () => {
  const cfnTags: Tags = [
    { tag: '!Ref', resolve: (value: string) => ({ Ref: value }) },
    { tag: '!GetAtt', resolve: (value: string) => ({ 'Fn::GetAtt': value }) },
    { tag: '!Sub', resolve: (value: string) => ({ 'Fn::Sub': value }) },
  ]
  const template = parseYaml(read('template.yaml'), { customTags: cfnTags }) as { Resources: Tree }
  const roles = {
    LockBucket: 'LockBucket',
    NightlyReport: 'Function',
    NightlyReportLogs: 'LogGroup',
  } as const
  const properties = (id: string) => ((template.Resources[id] as Tree).Properties ?? {}) as Tree
  const resolve = (value: Json) => resolveCloudFormation(value, roles) as Tree
  const policy = (role: Tree) => resolve(((role.Policies as Tree[])[0] as Tree).PolicyDocument as Json)
  const fn = properties('NightlyReport')
  const event = (((fn.Events as Tree).Nightly as Tree).Properties ?? {}) as Tree

  it('grants the function, the lock bucket and the Scheduler role what the constructs do', () => {
    expect(sorted(statements(policy(properties('NightlyReportRole'))))).toEqual(sorted(s3.functionRole))
    const bucketPolicy = resolve(properties('LockBucketPolicy').PolicyDocument as Json)
    expect(sorted(statements(bucketPolicy))).toEqual(sorted(s3.bucketPolicy))
    const scheduleRole = properties('NightlyReportScheduleRole')
    expect(statements(resolve(scheduleRole.AssumeRolePolicyDocument as Json))).toEqual(s3.schedulerTrust)
    expect(statements(policy(scheduleRole))).toEqual(s3.schedulerPolicy)
  })

  it('sends the same payload with the same retry policy, and sets the same lock environment', () => {
    expect(JSON.parse(String(event.Input))).toEqual(s3.scheduleTarget.input)
    expect(event.RetryPolicy).toEqual(s3.scheduleTarget.retryPolicy)
    expect(event.FlexibleTimeWindow).toEqual(s3.flexibleTimeWindow)
    expect(event.RoleArn).toEqual({ 'Fn::GetAtt': 'NightlyReportScheduleRole.Arn' })
    const variables = resolve((fn.Environment as Tree).Variables as Json)
    expect(
      Object.fromEntries(Object.entries(variables).filter(([k]) => k.startsWith('LAMBDA_SINGLETON_'))),
    ).toEqual(s3.environment)
  })
})

describe('the Terraform module', () => {
  const resolve = terraformResolver({
    'aws_s3_bucket.locks.arn': ['LockBucket', 'Arn'],
    'aws_s3_bucket.locks.bucket': ['LockBucket', 'Ref'],
    'aws_cloudwatch_log_group.nightly_report.arn': ['LogGroup', 'Arn'],
    'aws_lambda_function.nightly_report.arn': ['Function', 'Arn'],
  })
  let tf: Tree
  beforeAll(async () => {
    tf = await hcl2json.parse('main.tf', read('main.tf'))
  })
  const block = (kind: 'data' | 'resource', type: string, name: string) =>
    (((tf[kind] as Tree)[type] as Tree)[name] as Tree[])[0] as Tree
  const document = (name: string) =>
    (block('data', 'aws_iam_policy_document', name).statement as Tree[]).map((s) =>
      canonicalTerraform(s, resolve),
    )

  it('grants the function, the lock bucket and the Scheduler role what the constructs do', () => {
    expect(sorted(document('nightly_report'))).toEqual(sorted(s3.functionRole))
    expect(sorted(document('lock_bucket'))).toEqual(sorted(s3.bucketPolicy))
    expect(document('scheduler_trust')).toEqual(s3.schedulerTrust)
    expect(document('scheduler')).toEqual(s3.schedulerPolicy)
  })

  it('sends the same payload with the same retry policy, and sets the same lock environment', async () => {
    const schedule = block('resource', 'aws_scheduler_schedule', 'nightly')
    const target = (schedule.target as Tree[])[0] as Tree
    // `input = jsonencode({ … })`: read the object literal as HCL.
    const literal = String(target.input).replace(/^\$\{jsonencode\(([\s\S]*)\)\}$/, '$1')
    const locals = await hcl2json.parse('input.tf', `locals {\n  input = ${literal}\n}\n`)
    expect(((locals.locals as Tree[])[0] as Tree).input).toEqual(s3.scheduleTarget.input)
    const retry = (target.retry_policy as Tree[])[0] as Tree
    expect({
      MaximumRetryAttempts: retry.maximum_retry_attempts,
      MaximumEventAgeInSeconds: retry.maximum_event_age_in_seconds,
    }).toEqual(s3.scheduleTarget.retryPolicy)
    expect({ Mode: ((schedule.flexible_time_window as Tree[])[0] as Tree).mode }).toEqual(
      s3.flexibleTimeWindow,
    )
    const fn = block('resource', 'aws_lambda_function', 'nightly_report')
    const variables = ((fn.environment as Tree[])[0] as Tree).variables as Record<string, string>
    const lockVariables = Object.entries(variables).filter(([k]) => k.startsWith('LAMBDA_SINGLETON_'))
    expect(Object.fromEntries(lockVariables.map(([k, v]) => [k, resolve(v)]))).toEqual(s3.environment)
  })
})

describe('the bundling command', () => {
  it('builds an ESM bundle with the require banner the construct gives its bundles', () => {
    const page = readFileSync(fileURLToPath(new URL('../../docs/without-cdk.md', import.meta.url)), 'utf8')
    const command = /```sh\n(npx esbuild [\s\S]*?)```/.exec(page)?.[1] ?? ''
    expect(command).toContain(`--banner:js="${ESM_REQUIRE_BANNER}"`)
    for (const flag of ['--bundle', '--platform=node', '--format=esm', '--target=node24']) {
      expect(command).toContain(flag)
    }
  })
})
