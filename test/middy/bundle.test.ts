import { execFile } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import type { S3Client } from '@aws-sdk/client-s3'
import { build } from 'esbuild'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { freshBucket, getRecord, testS3Client } from '../support/s3.js'

const run = promisify(execFile)
const root = fileURLToPath(new URL('../..', import.meta.url))
let s3: S3Client
let bucket: string
let bundle: string

beforeAll(async () => {
  s3 = testS3Client()
  bucket = await freshBucket(s3, 'bundle')
  bundle = join(mkdtempSync(join(tmpdir(), 'lambda-singleton-bundle-')), 'index.mjs')
  // The options ScheduledSingletonFunction gives NodejsFunction (infra/scheduled-singleton-function.ts).
  await build({
    entryPoints: [join(root, 'functions/nightly-report.ts')],
    outfile: bundle,
    bundle: true,
    platform: 'node',
    target: 'node24',
    format: 'esm',
    minify: true,
    sourcemap: true,
    mainFields: ['module', 'main'],
    conditions: ['source'],
    banner: {
      js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
    },
    logLevel: 'silent',
  })
}, 60_000)

afterAll(() => s3.destroy())

/** One invocation of the bundle in its own Node process, as Lambda would run it. */
async function invoke(event: unknown): Promise<unknown> {
  const target = inject('s3')
  const { stdout } = await run(
    process.execPath,
    [join(root, 'test/support/run-lambda.mjs'), bundle, JSON.stringify(event)],
    {
      env: {
        PATH: process.env.PATH,
        HOME: mkdtempSync(join(tmpdir(), 'lambda-home-')),
        AWS_ENDPOINT_URL_S3: target.endpoint,
        AWS_REGION: target.region,
        AWS_ACCESS_KEY_ID: target.accessKeyId,
        AWS_SECRET_ACCESS_KEY: target.secretAccessKey,
        LAMBDA_SINGLETON_BUCKET: bucket,
        DATA_BUCKET: bucket,
      },
    },
  )
  const last = stdout.trim().split('\n').at(-1) ?? '{}'
  return (JSON.parse(last) as { result: unknown }).result
}

describe('functions/nightly-report.ts bundled like the construct bundles it', () => {
  it('runs in a separate Node process under lambda-local: one of two concurrent runs works, the other skips', async () => {
    const tick = {
      source: 'lambda-singleton.scheduler',
      schedule: 'nightly',
      scheduledTime: '2026-11-21T03:00:00Z',
    }
    const results = await Promise.all([invoke(tick), invoke(tick)])
    const ran = results.filter((r) => (r as { skipped?: boolean }).skipped !== true)
    expect(ran).toHaveLength(1)
    expect(ran[0]).toMatchObject({ report: 'reports/2026-11-20.json', token: 1 })
    expect(results.some((r) => (r as { skipped?: boolean }).skipped === true)).toBe(true)
    // The two processes start at slightly different times: the second finds the lock held, or
    // (if it starts after the first has finished) the tick done. Either way it does not run.
    expect(results.filter((r) => (r as { skipped?: boolean }).skipped === true)).toHaveLength(1)
    const lock = await getRecord(s3, bucket, 'locks/handler')
    expect(lock).toMatchObject({ token: 1, expires_at: 0, last_run: '2026-11-21T03:00:00Z' })
    expect(await invoke(tick)).toMatchObject({ skipped: true, reason: 'duplicate' })
  })
})
