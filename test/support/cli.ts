import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

const root = fileURLToPath(new URL('../..', import.meta.url))

/** Runs the CLI as a program from its sources, with only `env` (and PATH) in its environment. */
export async function runCliProgram(args: readonly string[], env: Record<string, string>): Promise<string> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--import', 'tsx', '--conditions=lambda-singleton-source', 'lib/cli/main.ts', ...args],
    { cwd: root, env: { PATH: process.env.PATH, ...env } },
  )
  return stdout
}
