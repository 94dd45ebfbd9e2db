import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { TestProject } from 'vitest/node'

/** How the integration tests reach S3: `S3_ENDPOINT` when given, else the local Ceph engine. */
export interface S3Target {
  endpoint: string
  region: string
  accessKeyId: string
  secretAccessKey: string
}

declare module 'vitest' {
  export interface ProvidedContext {
    s3: S3Target
  }
}

const script = fileURLToPath(new URL('../../scripts/s3-local.sh', import.meta.url))

const HOW_TO =
  'Integration tests need an S3 endpoint. Either install Ceph (run `bash .ci/run`, or ' +
  '`apt-get install ceph-mon ceph-osd radosgw ceph-common`) so the tests can start a local RADOS Gateway, ' +
  'or set S3_ENDPOINT, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_REGION to an existing endpoint.'

function localEngine(command: 'start' | 'stop' | 'status' | 'env'): string {
  return execFileSync('bash', [script, command], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
}

function parseEnv(text: string): Record<string, string> {
  const env: Record<string, string> = {}
  for (const match of text.matchAll(/^export (\w+)=['"]?([^'"\n]*)['"]?$/gm)) {
    if (match[1] && match[2] !== undefined) env[match[1]] = match[2]
  }
  return env
}

export default function setup(project: TestProject): (() => void) | undefined {
  const given = process.env.S3_ENDPOINT
  if (given) {
    project.provide('s3', {
      endpoint: given,
      region: process.env.AWS_REGION ?? 'us-east-1',
      accessKeyId: process.env.AWS_ACCESS_KEY_ID ?? '',
      secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY ?? '',
    })
    return undefined
  }
  let alreadyRunning = false
  try {
    localEngine('status')
    alreadyRunning = true
  } catch {
    // not running: start it below
  }
  try {
    if (!alreadyRunning) localEngine('start')
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? ''
    throw new Error(`Could not start the local S3 engine.\n${stderr.trim()}\n\n${HOW_TO}`, { cause: error })
  }
  const env = parseEnv(localEngine('env'))
  project.provide('s3', {
    endpoint: env.S3_ENDPOINT ?? '',
    region: env.AWS_REGION ?? 'us-east-1',
    accessKeyId: env.AWS_ACCESS_KEY_ID ?? '',
    secretAccessKey: env.AWS_SECRET_ACCESS_KEY ?? '',
  })
  // Leave an engine a developer started by hand running; stop the one we started.
  return alreadyRunning ? undefined : () => void localEngine('stop')
}
