// Whether a command's job (its session on Linux) still runs, as exec decides when to release,
// and what a signal to it reaches: real processes.
import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { jobRuns, ProcessGroup } from '../../lib/exec/process-group.js'
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

describe.skipIf(!linux)('jobRuns (Linux: /proc)', () => {
  it('a job with a running process runs', async () => {
    const { pid } = await shellWritingPid('setsid sleep 30 & echo $! > "$1"; wait')
    await until(() => jobRuns(pid), 5_000, 'the job never ran')
    expect(jobRuns(pid)).toBe(true)
    process.kill(-pid, 'SIGKILL')
  })

  it('a job left with only a zombie does not run, though signal 0 still finds its group', async () => {
    // The zombie's parent lives on outside the group and never reaps it, as a container's first
    // process may not: the case where signal 0 alone would keep exec waiting for ever.
    const { pid } = await shellWritingPid('setsid sh -c "exit 0" & echo $! > "$1"; exec sleep 30')
    await until(() => readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z '), 5_000, 'no zombie')
    expect(() => process.kill(-pid, 0)).not.toThrow()
    expect(jobRuns(pid)).toBe(false)
  })

  it('a job that is gone does not run', async () => {
    const { child, pid } = await shellWritingPid('setsid sleep 0 & echo $! > "$1"; wait')
    await until(() => child.exitCode !== null, 5_000, 'the shell never exited')
    expect(jobRuns(pid)).toBe(false)
  })
})

/** This process's own watchdog shells still alive (lib/exec/process-group.ts starts one per command). */
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

/** `pid`'s process group and session, as /proc has them; `undefined` once it is gone. */
function groupAndSession(pid: number): { pgrp: number; session: number } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const [, , pgrp, session] = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return { pgrp: Number(pgrp), session: Number(session) }
  } catch {
    return undefined
  }
}

/** Whether `pid` runs: there, and not a zombie. */
function runs(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return !/^[ZX]/.test(stat.slice(stat.lastIndexOf(')') + 2))
  } catch {
    return false
  }
}

describe.skipIf(!linux)("ProcessGroup: the job is the command's session (Linux)", () => {
  const pids: number[] = []
  const groups: ProcessGroup[] = []
  afterEach(() => {
    for (const group of groups.splice(0)) group.close()
    for (const pid of pids.splice(0)) {
      try {
        process.kill(pid, 'SIGKILL')
      } catch {
        // gone already
      }
    }
  })

  /** Starts `script` under `sh` as exec starts a command, and resolves the command and the pids it writes. */
  async function command(shell: string, script: string, count: number) {
    const file = join(mkdtempSync(join(tmpdir(), 'exec-session-')), 'pids')
    const group = new ProcessGroup([shell, '-c', script, 'job', file], process.env)
    if (group.pid === undefined) throw new Error('the command did not start')
    groups.push(group)
    pids.push(group.pid)
    const written = () => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [])
    await until(() => written().length >= count, 10_000, `fewer than ${count} pids written`)
    const workers = written().map(Number)
    pids.push(...workers)
    return { group, leader: group.pid, workers }
  }

  it("a process that left the command's group for one of its own (GNU timeout does) is still the job: it runs while it runs", async () => {
    // The shell runs timeout as a child (not as its last command, which it would exec).
    const { group, leader, workers } = await command(
      'sh',
      `timeout 30 sh -c 'echo $$ >> "$1"; exec sleep 30' inner "$1"; exit $?`,
      1,
    )
    const [worker = 0] = workers
    expect(groupAndSession(worker)?.pgrp, 'the worker left the group').not.toBe(leader)
    expect(groupAndSession(worker)?.session, 'the worker left the group, not the session').toBe(leader)
    process.kill(leader, 'SIGKILL')
    await group.leaderExit
    expect(runs(worker)).toBe(true)
    expect(group.running, "the job's worker runs on in a group of its own").toBe(true)
    process.kill(worker, 'SIGKILL')
    await until(() => !group.running, 5_000, 'the job still runs with its worker gone')
    group.close()
  })

  it("a signal to the job reaches every group of the command's session, not only the command's own (a job-control shell's jobs)", async () => {
    // bash with `set -m` puts each background job in a group of its own, even without a terminal.
    const { group, leader, workers } = await command(
      'bash',
      `set -m; for i in 1 2; do sleep 30 & echo $! >> "$1"; done; wait`,
      2,
    )
    for (const worker of workers) expect(groupAndSession(worker)?.pgrp).not.toBe(leader)
    group.signal('SIGTERM')
    await until(() => workers.every((worker) => !runs(worker)), 3_000, 'a job of the shell outlived SIGTERM')
    await group.gone()
    group.close()
  }, 15_000)

  it('a process that made a session of its own (setsid, a daemon that detaches) is not the job', async () => {
    const { group, workers } = await command('sh', `setsid sleep 30 & echo $! >> "$1"`, 1)
    await group.leaderExit
    const [daemon = 0] = workers
    await until(() => groupAndSession(daemon)?.session === daemon, 5_000, 'setsid never made its session')
    expect(runs(daemon)).toBe(true)
    expect(group.running).toBe(false)
    group.close()
  })
})
