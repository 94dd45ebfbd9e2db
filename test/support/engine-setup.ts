import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { TestProject } from 'vitest/node'

/** How tests reach an engine: an endpoint given in the environment, else one our script starts. */
export interface EngineTarget {
  endpoint: string
  region: string
  accessKeyId: string
  secretAccessKey: string
}

declare module 'vitest' {
  export interface ProvidedContext {
    s3: EngineTarget
    dynamodb: EngineTarget
  }
}

export interface EngineSpec {
  /** The name tests `inject()` it by. */
  readonly provide: 's3' | 'dynamodb'
  /** For messages, e.g. "the local S3 engine". */
  readonly title: string
  /** The script under scripts/ with start|stop|status|env. */
  readonly script: string
  /** The variable that names an existing endpoint instead (and that the script's `env` prints). */
  readonly endpointVariable: string
  /** Credentials when an endpoint is given without any (engines that check no signature). */
  readonly defaultCredential: string
  /** What to do when the engine cannot start. */
  readonly howTo: string
}

function parseEnv(text: string): Record<string, string> {
  const env: Record<string, string> = {}
  for (const match of text.matchAll(/^export (\w+)=['"]?([^'"\n]*)['"]?$/gm)) {
    if (match[1] && match[2] !== undefined) env[match[1]] = match[2]
  }
  return env
}

/**
 * A vitest global setup: provides the endpoint given in the environment, or starts the local
 * engine (unless one is running already) and stops the one it started.
 */
export function engineSetup(spec: EngineSpec): (project: TestProject) => (() => void) | undefined {
  const script = fileURLToPath(new URL(`../../scripts/${spec.script}`, import.meta.url))
  const localEngine = (command: 'start' | 'stop' | 'status' | 'env'): string =>
    execFileSync('bash', [script, command], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })

  return (project) => {
    const given = process.env[spec.endpointVariable]
    if (given) {
      project.provide(spec.provide, {
        endpoint: given,
        region: process.env.AWS_REGION ?? 'us-east-1',
        accessKeyId: process.env.AWS_ACCESS_KEY_ID ?? spec.defaultCredential,
        secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY ?? spec.defaultCredential,
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
      throw new Error(`Could not start ${spec.title}.\n${stderr.trim()}\n\n${spec.howTo}`, { cause: error })
    }
    const env = parseEnv(localEngine('env'))
    project.provide(spec.provide, {
      endpoint: env[spec.endpointVariable] ?? '',
      region: env.AWS_REGION ?? 'us-east-1',
      accessKeyId: env.AWS_ACCESS_KEY_ID ?? '',
      secretAccessKey: env.AWS_SECRET_ACCESS_KEY ?? '',
    })
    // Leave an engine a developer started by hand running; stop the one we started.
    return alreadyRunning ? undefined : () => void localEngine('stop')
  }
}
