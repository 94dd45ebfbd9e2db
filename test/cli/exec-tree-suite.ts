// `lambda-singleton exec` around a command that starts processes of its own (a shell script,
// `npm run job`): the whole process tree is the job. Real processes against a real engine; the
// tree's pids are written by the command itself, and checked with /proc (a zombie runs nothing).
import { execFileSync } from 'node:child_process'
import { mkdtempSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ExitCode } from '../../lib/cli/main.js'
import { RunningExec, within } from '../support/exec.js'
import type { ExecEngine } from './exec-suite.js'
import { execSuiteKit } from './exec-suite-kit.js'

const measured = (what: string, ms: number) =>
  console.info(`[exec tree measure] ${what}: ${Math.round(ms)} ms`)

/** Where `tool` is on this machine's PATH. */
const which = (tool: string) => execFileSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).trim()

export function execTreeSuite(engine: ExecEngine) {
  const { key, exec, forceRelease, expiresAt, withTree } = execSuiteKit(engine, 'exec-tree')

  describe(`lambda-singleton exec: the command's whole process tree, on ${engine.name}`, () => {
    it('a SIGTERM to exec stops every process of the group; exec releases once none runs', () =>
      withTree(async (tree, started) => {
        const lockKey = key()
        const run = exec(['--key', lockKey, '--', ...tree.command({ workers: 2 })])
        started.push(run)
        await tree.started(3, 40_000)
        run.child.kill('SIGTERM')
        const { code } = await within(30_000, 'exec exit', run.exited())
        expect(tree.running(), 'processes of the group still running when exec exited').toEqual([])
        expect(code).toBe(128 + 15) // the shell's own status
        expect(await expiresAt(lockKey)).toBe(0)
      }))

    it('a group that ignores SIGTERM gets SIGKILL after --kill-after, and only then is the lock released', () =>
      withTree(async (tree, started) => {
        const lockKey = key()
        const command = tree.command({ workers: 2, ignoreTerm: true })
        const run = exec(['--key', lockKey, '--kill-after', '1s', '--', ...command])
        started.push(run)
        await tree.started(3, 40_000)
        const termAt = performance.now()
        run.child.kill('SIGTERM')
        const { code } = await within(30_000, 'exec exit', run.exited())
        expect(tree.running()).toEqual([])
        expect(code).toBe(128 + 9)
        expect(await expiresAt(lockKey)).toBe(0)
        measured(
          `${engine.name}: SIGTERM ignored -> exec exit (--kill-after 1 s)`,
          performance.now() - termAt,
        )
      }))

    it('a lost lease stops every process of the group, not only the shell', () =>
      withTree(async (tree, started) => {
        const lockKey = key()
        const args = ['--key', lockKey, '--ttl', '6s', '--kill-after', '2s', '--']
        const run = exec([...args, ...tree.command({ workers: 2 })])
        started.push(run)
        await tree.started(3, 40_000)
        expect((await forceRelease(lockKey)).code).toBe(ExitCode.Ok)
        const { code } = await within(60_000, 'exec exit', run.exited())
        expect(code).toBe(ExitCode.Lost)
        expect(tree.running()).toEqual([])
      }))

    it("a SIGKILLed wrapper takes its command and the command's children with it", () =>
      withTree(async (tree, started) => {
        const lockKey = key()
        const run = exec(['--key', lockKey, '--ttl', '5s', '--', ...tree.command({ workers: 2 })])
        started.push(run)
        await tree.started(3, 40_000)
        await run.commandStarted()
        run.child.kill('SIGKILL')
        await run.exited()
        const tookMs = await tree.gone(2_000)
        measured(`${engine.name}: wrapper SIGKILL -> its whole tree gone`, tookMs)
      }))

    it("without setpriv on the PATH, exec says so once, and the watchdog alone takes a killed wrapper's tree down", () =>
      withTree(async (tree, started) => {
        const bin = mkdtempSync(join(tmpdir(), 'exec-no-setpriv-'))
        for (const tool of ['sh', 'sleep']) symlinkSync(which(tool), join(bin, tool))
        const env = { ...engine.env(), PATH: bin }
        const run = new RunningExec([...engine.store(), '--key', key(), '--', ...tree.command()], env)
        started.push(run)
        await tree.started(3, 40_000)
        await run.commandStarted()
        run.child.kill('SIGKILL')
        await run.exited()
        measured(
          `${engine.name}: wrapper SIGKILL -> its whole tree gone, watchdog only`,
          await tree.gone(2_000),
        )
        expect(run.stderr.match(/"level":"WARN","message":"no setpriv/g)).toHaveLength(1)
      }))

    it('a command that exits leaving processes behind keeps the lock until they are gone', () =>
      withTree(async (tree, started) => {
        const lockKey = key()
        const command = tree.command({ workers: 1, workerSeconds: 8, leaveWorkers: true })
        const run = exec(['--key', lockKey, '--', ...command])
        started.push(run)
        const [worker] = await tree.started(2, 40_000)
        const startedAt = performance.now()
        // The shell has exited; its worker runs on, and holds the lock as flock(1)'s children do.
        const other = exec(['--key', lockKey, '--on-held', 'fail', '--', 'true'])
        started.push(other)
        expect((await other.exited()).code, other.stderr).toBe(ExitCode.Held)
        expect(tree.running()).toEqual([worker])
        const { code } = await within(30_000, 'exec exit', run.exited())
        expect(code).toBe(0)
        expect(tree.running()).toEqual([])
        expect(await expiresAt(lockKey)).toBe(0)
        expect(performance.now() - startedAt).toBeGreaterThan(4_000)
        expect(run.stderr).toMatch(/"outcome":"released".*"completed":true/)
      }))
  })
}
