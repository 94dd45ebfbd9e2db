// Whether a command's process group still runs, as exec decides when to release: real processes.
import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { groupRuns, ProcessGroup } from '../../lib/exec/process-group.js'
import { until } from '../support/exec.js'

const linux = existsSync('/proc/self/stat')
const started: ChildProcess[] = []
afterEach(() => {
  for (const child of started.splice(0)) child.kill('SIGKILL')
})

/** Runs `script` under `sh`, and resolves the pid it writes to the file `$1` names. */
async function shellWritingPid(script: string): Promise<{ child: ChildProcess; pid: number }> {
  const file = join(mkdtempSync(join(tmpdir(), 'exec-group-')), 'pid')
  const child = spawn('sh', ['-c', script, 'sh', file], { stdio: 'ignore' })
  started.push(child)
  await until(() => existsSync(file) && readFileSync(file, 'utf8').endsWith('\n'), 10_000, 'no pid written')
  return { child, pid: Number(readFileSync(file, 'utf8').trim()) }
}

describe.skipIf(!linux)('groupRuns (Linux: /proc)', () => {
  it('a group with a running process runs', async () => {
    const { pid } = await shellWritingPid('setsid sleep 30 & echo $! > "$1"; wait')
    await until(() => groupRuns(pid), 5_000, 'the group never ran')
    expect(groupRuns(pid)).toBe(true)
    process.kill(-pid, 'SIGKILL')
  })

  it('a group left with only a zombie does not run, though signal 0 still finds it', async () => {
    // The zombie's parent lives on outside the group and never reaps it, as a container's first
    // process may not: the case where signal 0 alone would keep exec waiting for ever.
    const { pid } = await shellWritingPid('setsid sh -c "exit 0" & echo $! > "$1"; exec sleep 30')
    await until(() => readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z '), 5_000, 'no zombie')
    expect(() => process.kill(-pid, 0)).not.toThrow()
    expect(groupRuns(pid)).toBe(false)
  })

  it('a group that is gone does not run', async () => {
    const { child, pid } = await shellWritingPid('setsid sleep 0 & echo $! > "$1"; wait')
    await until(() => child.exitCode !== null, 5_000, 'the shell never exited')
    expect(groupRuns(pid)).toBe(false)
  })
})

/** This process's own watchdog shells still alive (lib/exec/process-group.ts starts one per group). */
function ownWatchdogs(): number {
  return readdirSync('/proc').filter((entry) => {
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      return ppid === process.pid && readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes('read group <&3')
    } catch {
      return false // not a process, or gone meanwhile
    }
  }).length
}

describe.skipIf(!linux)('ProcessGroup (Linux)', () => {
  it('a command the system refuses to start at once (E2BIG: an argument too long) never started: no throw, its exit says why, no watchdog is left', async () => {
    // Linux takes at most 128 KiB in one argument; spawn() then throws instead of reporting.
    const group = new ProcessGroup(['true', 'x'.repeat(200_000)], process.env)
    expect(group.pid).toBeUndefined()
    expect(group.running).toBe(false)
    await expect(group.leaderExit).resolves.toMatchObject({ kind: 'not-started', error: { code: 'E2BIG' } })
    group.close()
    await until(() => ownWatchdogs() === 0, 5_000, 'its watchdog was left behind')
  })
})
