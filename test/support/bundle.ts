import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { build, type Metafile } from 'esbuild'
import type { LockStoreKind } from '../../lib/config.js'

const run = promisify(execFile)
const root = fileURLToPath(new URL('../..', import.meta.url))

/**
 * Bundles `entry` with the options ScheduledSingletonFunction gives NodejsFunction
 * (infra/scheduled-singleton-function.ts), for a function bound to a store of `kind`.
 * Returns the bundle's path, its text, and esbuild's metafile (what each input put in it).
 */
export async function bundleLikeTheConstruct(
  entry: string,
  kind: LockStoreKind,
): Promise<{ path: string; code: string; metafile: Metafile }> {
  const path = join(mkdtempSync(join(tmpdir(), 'lambda-singleton-bundle-')), 'index.mjs')
  const { metafile } = await build({
    entryPoints: [join(root, entry)],
    outfile: path,
    bundle: true,
    platform: 'node',
    target: 'node24',
    format: 'esm',
    minify: true,
    sourcemap: true,
    mainFields: ['module', 'main'],
    conditions: ['lambda-singleton-source'],
    banner: {
      js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
    },
    define: { 'process.env.LAMBDA_SINGLETON_STORE': JSON.stringify(kind) },
    metafile: true,
    logLevel: 'silent',
  })
  return { path, code: readFileSync(path, 'utf8'), metafile }
}

/** One invocation of a bundle in its own Node process, as Lambda would run it; its result. */
export async function invokeBundle(
  bundle: string,
  event: unknown,
  env: Record<string, string>,
): Promise<unknown> {
  const { stdout } = await run(
    process.execPath,
    [join(root, 'test/support/run-lambda.mjs'), bundle, JSON.stringify(event)],
    { env: { PATH: process.env.PATH, HOME: mkdtempSync(join(tmpdir(), 'lambda-home-')), ...env } },
  )
  const last = stdout.trim().split('\n').at(-1) ?? '{}'
  return (JSON.parse(last) as { result: unknown }).result
}
