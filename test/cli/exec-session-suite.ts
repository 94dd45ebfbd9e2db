// `lambda-singleton exec` around a command whose processes make process groups of their own
// without leaving its session: GNU `timeout` (a group for itself and what it runs) and a shell
// with job control (`set -m`: a group per job). They are the job all the same: signalled,
// stopped on a lost lease, waited for before the release, killed with a SIGKILLed wrapper.
// Real processes against a real engine; the pids are written by the command itself.
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { ExitCode } from '../../lib/cli/main.js'
import { type ProcessTree, within } from '../support/exec.js'
import type { ExecEngine } from './exec-suite.js'
import { execSuiteKit } from './exec-suite-kit.js'

const measured = (what: string, ms: number) =>
  console.info(`[exec session measure] ${what}: ${Math.round(ms)} ms`)

/**
 * `sh` running `timeout 60` as a child (not as its last command, which the shell would exec):
 * timeout puts itself and the sleep it runs in a group of their own. Writes the sleep's pid,
 * then the shell's.
 */
function underTimeout(tree: ProcessTree): string[] {
  const inner = `echo $$ >> "$1"; exec sleep 60`
  return ['sh', '-c', `timeout 60 sh -c '${inner}' inner "$1" & echo $$ >> "$1"; wait`, 'job', tree.path]
}

/**
 * bash with job control on (`set -m`, as a script may set it): each of its `jobs` background
 * sleeps of `seconds` is a group of its own. Writes their pids, then its own; then waits for
 * them, or exits at once leaving them behind (`leaveJobs`).
 */
function jobControlShell(
  tree: ProcessTree,
  options: { jobs: number; seconds?: number; leaveJobs?: boolean },
) {
  const { jobs, seconds = 60, leaveJobs = false } = options
  const start = Array.from({ length: jobs }, () => `sleep ${seconds} & echo $! >> "$1";`).join(' ')
  return [
    'bash',
    '-c',
    `set -m; ${start} echo $$ >> "$1"; ${leaveJobs ? 'exit 0' : 'wait'}`,
    'job',
    tree.path,
  ]
}

/** `pid`'s process group, as /proc has it. */
function pgrp(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2])
}

export function execSessionSuite(engine: ExecEngine) {
  const { key, exec, forceRelease, expiresAt, withTree } = execSuiteKit(engine, 'exec-session')
  /**
   * The pids written, once `count` are: the last is the command's, which leads its group (and
   * its session); the others are in groups of their own.
   */
  const started = async (tree: ProcessTree, count: number) => {
    const pids = await tree.started(count, 40_000)
    const command = pids[pids.length - 1]
    for (const pid of pids.slice(0, -1))
      expect(pgrp(pid), "a worker in the command's group").not.toBe(command)
    return pids
  }

  describe(`lambda-singleton exec: processes in groups of their own are the job too, on ${engine.name}`, () => {
    it('a SIGTERM to exec reaches what GNU timeout runs in a group of its own; exec releases once none of it runs', () =>
      withTree(async (tree, runs) => {
        const lockKey = key()
        const run = exec(['--key', lockKey, '--', ...underTimeout(tree)])
        runs.push(run)
        await started(tree, 2)
        run.child.kill('SIGTERM')
        const { code } = await within(30_000, 'exec exit', run.exited())
        expect(tree.running(), 'processes of the job still running when exec exited').toEqual([])
        expect(code).toBe(128 + 15)
        expect(await expiresAt(lockKey)).toBe(0)
      }))

    it("a lost lease stops a job-control shell's jobs, each a group of its own, not only the shell", () =>
      withTree(async (tree, runs) => {
        const lockKey = key()
        const args = ['--key', lockKey, '--ttl', '6s', '--kill-after', '2s', '--']
        const run = exec([...args, ...jobControlShell(tree, { jobs: 2 })])
        runs.push(run)
        await started(tree, 3)
        expect((await forceRelease(lockKey)).code).toBe(ExitCode.Ok)
        const { code } = await within(60_000, 'exec exit', run.exited())
        expect(code).toBe(ExitCode.Lost)
        expect(tree.running(), 'processes of the job still running when exec exited').toEqual([])
      }))

    it('a command that exits leaving a job-control job behind keeps the lock until that job ends', () =>
      withTree(async (tree, runs) => {
        const lockKey = key()
        const run = exec([
          '--key',
          lockKey,
          '--',
          ...jobControlShell(tree, { jobs: 1, seconds: 8, leaveJobs: true }),
        ])
        runs.push(run)
        const [job] = await started(tree, 2)
        const startedAt = performance.now()
        // The shell has exited; its job runs on in a group of its own, and holds the lock.
        const other = exec(['--key', lockKey, '--on-held', 'fail', '--', 'true'])
        runs.push(other)
        expect((await other.exited()).code, other.stderr).toBe(ExitCode.Held)
        expect(tree.running()).toEqual([job])
        const { code } = await within(30_000, 'exec exit', run.exited())
        expect(code).toBe(0)
        expect(tree.running()).toEqual([])
        expect(await expiresAt(lockKey)).toBe(0)
        expect(performance.now() - startedAt).toBeGreaterThan(4_000)
      }))

    it("a SIGKILLed wrapper takes its command's processes with it, in whatever group of the session", () =>
      withTree(async (tree, runs) => {
        const run = exec(['--key', key(), '--ttl', '5s', '--', ...jobControlShell(tree, { jobs: 2 })])
        runs.push(run)
        await started(tree, 3)
        await run.commandStarted()
        run.child.kill('SIGKILL')
        await run.exited()
        measured(`${engine.name}: wrapper SIGKILL -> every group of the session gone`, await tree.gone(2_000))
      }))
  })
}
