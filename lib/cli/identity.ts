// What the CLI says of itself, and of who runs it.
import { readFileSync } from 'node:fs'
import { hostname, userInfo } from 'node:os'

/**
 * Who runs the CLI, as written into the records it changes (`force-released by …`): the user
 * and the machine's real host name, so that a record names the person and place to ask.
 * The user is left out when the system has none for this process (a container's bare uid).
 */
export function defaultOperator(env: NodeJS.ProcessEnv = {}): string {
  const host = hostname()
  let user: string | undefined
  try {
    user = userInfo().username
  } catch {
    user = env.USER ?? env.LOGNAME
  }
  return user ? `${user}@${host}` : host
}

/** The version of the installed package: from its package.json, found above this file. */
export function packageVersion(): string {
  for (const up of ['../../package.json', '../../../package.json']) {
    try {
      const json = JSON.parse(readFileSync(new URL(up, import.meta.url), 'utf8')) as {
        name?: unknown
        version?: unknown
      }
      if (json.name === 'lambda-singleton' && typeof json.version === 'string') return json.version
    } catch {
      // not there: this file runs from lib/cli (sources) or dist/lib/cli (the package)
    }
  }
  return 'unknown'
}
