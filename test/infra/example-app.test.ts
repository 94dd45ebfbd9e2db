import { execFile } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { App, Validations } from 'aws-cdk-lib'
import { Template } from 'aws-cdk-lib/assertions'
import { AwsSolutionsChecks } from 'cdk-nag'
import { afterAll, describe, expect, it } from 'vitest'
import { ExampleStack } from '../../infra/example-stack.js'
import { LOCK_ENV } from '../../lib/config.js'
import { nagAcknowledgements, nagFindings, rawNagFindings } from './support.js'

const run = promisify(execFile)
const repo = fileURLToPath(new URL('../../', import.meta.url))
const outdirs: string[] = []
const scratch = (label: string) => {
  const dir = mkdtempSync(join(tmpdir(), `ls-infra-${label}-`))
  outdirs.push(dir)
  return dir
}
afterAll(() => {
  for (const dir of outdirs) rmSync(dir, { recursive: true, force: true })
})

// One real synth, bundling included, shared by every test below: the app as `infra/app.ts` builds it.
const app = new App({ outdir: scratch('app'), analyticsReporting: false })
const stack = new ExampleStack(app, 'LambdaSingletonExample')
Validations.of(app).addPlugins(new AwsSolutionsChecks(app))
const assembly = app.synth()
const synthesized = assembly.getStackArtifact(stack.artifactId).template as {
  Resources: Record<string, { Type: string; Properties: Record<string, unknown> }>
}
const template = Template.fromJSON(synthesized)
const functions = Object.values(synthesized.Resources).filter((r) => r.Type === 'AWS::Lambda::Function')

describe('the example app', () => {
  it('synthesizes with cdk-nag AwsSolutions registered, and nothing is left unacknowledged', () => {
    expect(Object.keys(synthesized.Resources).length).toBeGreaterThan(20)
    expect(nagFindings(app)).toEqual([])
  })

  it('acknowledges only findings that exist, each with a reason', () => {
    const raw = rawNagFindings(app)
    const acks = nagAcknowledgements(app)
    expect(raw.length).toBe(
      raw.filter((f) => acks.some((a) => a.rule === f.rule && f.path.startsWith(`${a.path}/`))).length,
    )
    for (const ack of acks) {
      expect(ack.reason.length).toBeGreaterThan(40)
      expect(raw.some((f) => f.rule === ack.rule && f.path.startsWith(`${ack.path}/`))).toBe(true)
    }
    // What is acknowledged, by rule: IAM5 on prefix-scoped grants (lock and data objects, and
    // grantInvoke's version wildcard), SQS3 on the Scheduler dead-letter queues. Nothing else.
    expect([...new Set(acks.map((a) => a.rule.replace(/\[.*$/, '')))].sort()).toEqual([
      'AwsSolutions-IAM5',
      'AwsSolutions-SQS3',
    ])
  })

  it('has the two example functions on nodejs24.x, wired to the shared lock bucket', () => {
    const lockBucket = stack.getLogicalId(stack.lockBucket.createdBucket?.node.defaultChild as never)
    expect(functions).toHaveLength(2)
    for (const fn of functions) {
      expect(fn.Properties).toMatchObject({
        Runtime: 'nodejs24.x',
        Handler: 'index.handler',
        Environment: {
          Variables: { [LOCK_ENV.bucket]: { Ref: lockBucket }, [LOCK_ENV.keyPrefix]: 'locks/' },
        },
      })
    }
    const inputs = Object.values(
      template.findResources('AWS::Scheduler::Schedule') as Record<
        string,
        { Properties: { Target: { Input: string } } }
      >,
    ).map((s) => (JSON.parse(s.Properties.Target.Input) as { schedule: string }).schedule)
    expect(inputs.sort()).toEqual(['acme', 'globex', 'nightly'])
  })

  it('bundles each handler as minified ESM with a source map, the middleware and the SDK inside', async () => {
    for (const fn of functions) {
      const { S3Key } = fn.Properties.Code as { S3Key: string }
      const dir = join(assembly.directory, `asset.${S3Key.replace(/\.zip$/, '')}`)
      const code = readFileSync(join(dir, 'index.mjs'), 'utf8')
      // Booleans, not toContain(): a failure should not print a 600 kB bundle.
      expect(existsSync(join(dir, 'index.mjs.map'))).toBe(true)
      expect(code.startsWith("import { createRequire } from 'node:module'")).toBe(true)
      expect(code.split('\n').length).toBeLessThan(200) // minified
      expect(code.includes('"LAMBDA_SINGLETON_BUCKET"')).toBe(true) // the middleware, from lib/ sources
      expect(code.includes('"PutObject"') && code.includes('AmazonS3')).toBe(true) // the AWS SDK, bundled
      expect(/from ?["']@aws-sdk\//.test(code)).toBe(false) // ...and not left as an import
      expect(code.includes('DynamoDB')).toBe(false) // an S3 lock: the DynamoDB store left out
      // Load it as Lambda would: a module that exports `handler`.
      const { stdout } = await run(
        process.execPath,
        [
          '--input-type=module',
          '-e',
          `const m = await import(${JSON.stringify(pathToFileURL(join(dir, 'index.mjs')).href)}); console.log(typeof m.handler)`,
        ],
        { env: { ...process.env, [LOCK_ENV.bucket]: 'example-locks', AWS_REGION: 'eu-west-1' } },
      )
      expect(stdout.trim()).toBe('function')
    }
  })

  it('matches the snapshot, asset hashes aside', () => {
    const normalised = JSON.parse(
      JSON.stringify(synthesized).replace(/[0-9a-f]{64}/g, '[ASSET_HASH]'),
    ) as unknown
    expect(normalised).toMatchSnapshot()
  })

  it('runs under the pinned CDK CLI: `cdk synth` with cdk.json, no credentials needed', async () => {
    const out = scratch('cli')
    const env = { ...process.env, AWS_ACCESS_KEY_ID: '', AWS_SECRET_ACCESS_KEY: '', AWS_PROFILE: '' }
    await run(process.execPath, [join(repo, 'node_modules/aws-cdk/bin/cdk'), 'synth', '--quiet', '-o', out], {
      cwd: repo,
      env,
    })
    const fromCli = JSON.parse(readFileSync(join(out, 'LambdaSingletonExample.template.json'), 'utf8')) as {
      Resources: Record<string, { Type: string }>
    }
    const types = Object.values(fromCli.Resources).map((r) => r.Type)
    expect(types.filter((t) => t === 'AWS::Scheduler::Schedule')).toHaveLength(3)
  })
})
