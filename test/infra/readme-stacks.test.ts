// The README's CDK example deploys the README's handler as it stands: the handler writes its
// parts to OUTPUT_BUCKET with fencedPut (a HEAD, then a conditional PUT), and the construct
// grants only the lock prefix, so the example must set that variable and grant that bucket.
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { App, type Stack } from 'aws-cdk-lib'
import { Template } from 'aws-cdk-lib/assertions'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { JobsStack } from '../../examples/readme/new-function.js'
import { nagAcknowledgements, nagFindings } from './support.js'

const root = fileURLToPath(new URL('../..', import.meta.url))
type Statement = { Effect: string; Action: string | string[]; Resource: unknown }

let template: Template
let jobs: Stack
const cwd = process.cwd()

beforeAll(() => {
  // The example's entry is `src/nightly-report.ts`, relative to the app: give it one to find.
  const app = mkdtempSync(join(tmpdir(), 'readme-stack-'))
  mkdirSync(join(app, 'src'))
  writeFileSync(join(app, 'src/nightly-report.ts'), 'export const handler = async () => 1\n')
  writeFileSync(join(app, 'package-lock.json'), '{}')
  process.chdir(app)
  const cdkApp = new App({ context: { 'aws:cdk:bundling-stacks': [] }, analyticsReporting: false })
  jobs = new JobsStack(cdkApp, 'Jobs')
  template = Template.fromStack(jobs)
}, 120_000)

afterAll(() => process.chdir(cwd))

describe("the README's new-function example", () => {
  it('gives the function the OUTPUT_BUCKET the README handler writes to', () => {
    const handler = readFileSync(join(root, 'examples/readme/handler.ts'), 'utf8')
    expect(handler).toContain('process.env.OUTPUT_BUCKET')
    const [fn] = Object.values(
      template.findResources('AWS::Lambda::Function', { Properties: { Handler: 'index.handler' } }),
    )
    const variables = (fn as { Properties: { Environment: { Variables: Record<string, unknown> } } })
      .Properties.Environment.Variables
    expect(variables.OUTPUT_BUCKET).toEqual({ Ref: expect.stringMatching(/^Output/) })
  })

  it("lets the function HEAD and PUT the handler's parts in that bucket, as fencedPut does", () => {
    const statements = Object.values(template.findResources('AWS::IAM::Policy')).flatMap(
      (policy) =>
        (policy as { Properties: { PolicyDocument: { Statement: Statement[] } } }).Properties.PolicyDocument
          .Statement,
    )
    const onOutput = statements.filter((s) => JSON.stringify(s.Resource).includes('"Output'))
    const actions = onOutput.flatMap((s) => [s.Action].flat())
    expect(actions).toEqual(expect.arrayContaining(['s3:PutObject', 's3:GetObject']))
    expect(JSON.stringify(onOutput.map((s) => s.Resource))).toContain('/parts/*')
  })

  it('leaves cdk-nag AwsSolutions no IAM finding: its prefix grant on the output bucket is acknowledged, exactly and with a reason', () => {
    // What is left is the buckets' server access logs (S1), which docs/cdk.md leaves to the user.
    expect(nagFindings(jobs)).toEqual([
      { rule: 'AwsSolutions-S1', path: 'Jobs/Output/Resource' },
      { rule: 'AwsSolutions-S1', path: 'Jobs/NightlyReport/Singleton/LockBucket/Bucket/Resource' },
    ])
    const acknowledged = nagAcknowledgements(jobs).filter((a) => a.path === 'Jobs/NightlyReport')
    expect(acknowledged).toEqual([
      {
        rule: expect.stringMatching(/^AwsSolutions-IAM5\[Resource::<Output\w+\.Arn>\/parts\/\*\]$/),
        path: 'Jobs/NightlyReport',
        reason: expect.any(String),
      },
    ])
  })
})
