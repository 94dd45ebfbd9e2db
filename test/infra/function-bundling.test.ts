import { execFile } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { App, Duration, Stack } from 'aws-cdk-lib'
import * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs'
import { ScheduleExpression } from 'aws-cdk-lib/aws-scheduler'
import { afterAll, describe, expect, it } from 'vitest'
import { ScheduledSingletonFunction, type SingletonFunctionProps } from '../../infra/index.js'
import { FIXTURE_ENTRY } from './support.js'

const run = promisify(execFile)
const outdirs: string[] = []
afterAll(() => {
  for (const dir of outdirs) rmSync(dir, { recursive: true, force: true })
})

/** Bundles the fixture handler for real (esbuild), with `bundling`, and returns the asset's files. */
function bundle(bundling: SingletonFunctionProps['bundling']): { dir: string; files: string[] } {
  const outdir = mkdtempSync(join(tmpdir(), 'ls-infra-bundling-'))
  outdirs.push(outdir)
  const app = new App({ outdir, analyticsReporting: false })
  const stack = new Stack(app, 'Jobs', { env: { account: '111111111111', region: 'eu-west-1' } })
  new ScheduledSingletonFunction(stack, 'Job', {
    entry: FIXTURE_ENTRY,
    lockKey: 'job',
    schedules: [{ name: 'hourly', expression: ScheduleExpression.rate(Duration.hours(1)) }],
    // Quick to build and to read: the fixture alone, unminified, no source map.
    functionProps: { bundling: { minify: false, sourceMap: false, ...bundling } },
  })
  const assembly = app.synth()
  const asset = readdirSync(assembly.directory).find((name) => name.startsWith('asset.'))
  if (!asset) throw new Error('no asset was bundled')
  const dir = join(assembly.directory, asset)
  return { dir, files: readdirSync(dir) }
}

describe('ScheduledSingletonFunction: bundling', () => {
  it('bundles CommonJS without the ES module banner when bundling.format is CJS, and the bundle loads', async () => {
    const { dir, files } = bundle({ format: nodejs.OutputFormat.CJS })
    expect(files).toEqual(['index.js'])
    const code = readFileSync(join(dir, 'index.js'), 'utf8')
    expect(code.includes('import.meta')).toBe(false)
    expect(/^\s*import\s/m.test(code)).toBe(false)
    // Load it as Lambda loads a .js handler: require(), then call the export.
    const { stdout } = await run(process.execPath, [
      '-e',
      `require(${JSON.stringify(join(dir, 'index.js'))}).handler().then((r) => console.log(r))`,
    ])
    expect(stdout.trim()).toBe('ok')
  })

  it('keeps the ES module banner, which gives the bundle a require(), for the default ESM', () => {
    const { dir, files } = bundle({})
    expect(files).toEqual(['index.mjs'])
    const code = readFileSync(join(dir, 'index.mjs'), 'utf8')
    expect(code.startsWith("import { createRequire } from 'node:module'")).toBe(true)
  })
})
