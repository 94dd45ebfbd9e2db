// What the suites of `lambda-singleton exec` around a process tree (exec-tree-suite.ts,
// exec-session-suite.ts) share: they run the same wrapper against the same engine, and must
// leave no process behind whichever of their specs fails.
import { randomUUID } from 'node:crypto'
import { runCliProgram } from '../support/cli.js'
import { ProcessTree, RunningExec } from '../support/exec.js'
import type { ExecEngine } from './exec-suite.js'

/**
 * `keyPrefix` names the suite in its lock keys (`locks/<keyPrefix>-…`), so that a key left in
 * the engine's shared bucket or table tells which suite wrote it.
 */
export function execSuiteKit(engine: ExecEngine, keyPrefix: string) {
  const key = () => `locks/${keyPrefix}-${randomUUID().slice(0, 8)}`
  const exec = (args: readonly string[]) => new RunningExec([...engine.store(), ...args], engine.env())
  const cli = (...args: string[]) => runCliProgram([...args, ...engine.store()], engine.env())
  const expiresAt = async (lockKey: string) => {
    const { code, stdout, stderr } = await cli('inspect', '--key', lockKey, '--json')
    if (code !== 0) throw new Error(`inspect exited ${code}: ${stderr}`)
    return (JSON.parse(stdout).record as { expires_at: number }).expires_at
  }
  /**
   * An operator's force-release of a held lock: one call, though the holder renews every 1.3 s
   * (ttl 4 s), and on a slow machine between the command's read and its write.
   */
  const forceRelease = (lockKey: string) => cli('force-release', '--key', lockKey)
  /** Runs `test` with a fresh tree and wrapper, and leaves neither running whatever happens. */
  const withTree = async (test: (tree: ProcessTree, started: RunningExec[]) => Promise<void>) => {
    const tree = new ProcessTree()
    const started: RunningExec[] = []
    try {
      await test(tree, started)
    } catch (error) {
      throw new Error(`${String(error)}\nexec's stderr:\n${started.map((run) => run.stderr).join('\n')}`, {
        cause: error,
      })
    } finally {
      for (const run of started) if (run.child.exitCode === null) run.child.kill('SIGKILL')
      tree.kill()
    }
  }
  return { key, exec, cli, forceRelease, expiresAt, withTree }
}
