import { constants } from 'node:fs'
import { access, stat } from 'node:fs/promises'
import { delimiter, join } from 'node:path'

/**
 * Why `program` cannot be started, as the shell would say (ENOENT: not there, 127; EACCES: there
 * but not executable, 126), or undefined when it can. `exec` asks before it takes the lock: a
 * command that cannot start is a mistake to report, not a failed run to record (a failed run
 * counts towards `--pause-after-failures`). A program removed between this look and its start is
 * still caught there.
 */
export async function locateProgram(
  program: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<NodeJS.ErrnoException | undefined> {
  // A path is looked at where it is; a bare name along PATH, as execvp does.
  const candidates = program.includes('/')
    ? [program]
    : (env.PATH ?? '').split(delimiter).map((dir) => join(dir || '.', program))
  let notExecutable: string | undefined
  for (const candidate of candidates) {
    const found = await stat(candidate).catch(() => undefined)
    if (!found?.isFile()) continue
    if (
      await access(candidate, constants.X_OK).then(
        () => true,
        () => false,
      )
    )
      return undefined
    notExecutable ??= candidate
  }
  return notExecutable === undefined
    ? failure('ENOENT', program.includes('/') ? `${program}: no such file` : `${program}: not found in PATH`)
    : failure('EACCES', `${notExecutable}: not executable (permission denied)`)
}

function failure(code: 'ENOENT' | 'EACCES', message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(message), { code })
}
