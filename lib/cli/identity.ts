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
