// `lambda-singleton exec` as real processes against a real engine (Ceph's S3 or DynamoDB Local),
// the job a real process too. Delays are measured and printed, not bounded: the machine is shared.
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ExitCode } from '../../lib/cli/main.js'
import { alive, JobLog, RunningExec, running, talkingToStore, until, within } from '../support/exec.js'
import { execSuiteKit } from './exec-suite-kit.js'

export interface ExecEngine {
  readonly name: string
  /** `--bucket B` or `--table T …` */
  readonly store: () => string[]
  readonly env: () => Record<string, string>
}

/** A file that is there but may not be run: the shell's 126. */
function notExecutable(): string {
  const path = join(mkdtempSync(join(tmpdir(), 'exec-126-')), 'job.sh')
  writeFileSync(path, '#!/bin/sh\necho never\n', { mode: 0o644 })
  return path
}

const measured = (what: string, ms: number) => console.info(`[exec measure] ${what}: ${Math.round(ms)} ms`)

export function execSuite(engine: ExecEngine) {
  const { key, exec, cli, forceRelease } = execSuiteKit(engine, 'exec')
  const record = async (lockKey: string) => {
    const { code, stdout, stderr } = await cli('inspect', '--key', lockKey, '--json')
    if (code !== 0) throw new Error(`inspect exited ${code}: ${stderr}`)
    return JSON.parse(stdout).record as {
      token: number
      expires_at: number
      last_run?: string
      owner: string
      history?: { outcome: string }[]
    }
  }

  describe(`lambda-singleton exec on ${engine.name}`, () => {
    it('runs the command with the lease in its environment, passes its exit code on, releases', async () => {
      const log = new JobLog()
      const lockKey = key()
      const run = exec(['--key', lockKey, '--', ...log.job('a', { exitCode: 3 })])
      expect((await run.exited()).code).toBe(3)
      const [start] = log.notes()
      const stored = await record(lockKey)
      expect(start).toMatchObject({ what: 'start', key: lockKey, token: String(stored.token) })
      expect(start?.owner).toBe(stored.owner)
      expect(Date.parse(start?.expiresAt ?? '')).toBeGreaterThan(start?.at ?? 0)
      expect(stored.expires_at).toBe(0) // released
      expect(run.stderr).toMatch(/"outcome":"released"/)
      expect(run.stdout).toBe('')
    })

    it('5 concurrent wrappers: every command runs, never two at once, tokens rising', async () => {
      const log = new JobLog()
      const lockKey = key()
      const runs = ['1', '2', '3', '4', '5'].map((id) =>
        exec([
          '--key',
          lockKey,
          '--on-held',
          'wait',
          '--wait',
          '300s',
          '--',
          ...log.job(id, { sleepMs: 400 }),
        ]),
      )
      const codes = await Promise.all(runs.map(async (run) => (await run.exited()).code))
      expect(codes).toEqual([0, 0, 0, 0, 0])
      const intervals = log.intervals()
      expect(intervals).toHaveLength(5)
      for (let i = 1; i < intervals.length; i++) {
        const [before, after] = [intervals[i - 1], intervals[i]]
        expect(after?.start).toBeGreaterThanOrEqual(before?.end ?? Number.POSITIVE_INFINITY)
        expect(after?.token).toBeGreaterThan(before?.token ?? Number.POSITIVE_INFINITY)
      }
      const gaps = intervals.slice(1).map((run, i) => run.start - (intervals[i]?.end ?? 0))
      measured(`${engine.name}: 5 concurrent, gaps between runs`, Math.min(...gaps))
    })

    it('a held lock: skip exits 0 and fail exits 7, without running the command', async () => {
      const log = new JobLog()
      const lockKey = key()
      const holder = exec(['--key', lockKey, '--', ...log.job('holder', { sleepMs: 60_000 })])
      await log.waitFor((note) => note.id === 'holder' && note.what === 'start')
      const skip = exec(['--key', lockKey, '--', ...log.job('skip')])
      const fail = exec(['--key', lockKey, '--on-held', 'fail', '--', ...log.job('fail')])
      const wait = exec(['--key', lockKey, '--on-held', 'wait', '--wait', '1s', '--', ...log.job('wait')])
      expect((await skip.exited()).code).toBe(ExitCode.Ok)
      expect((await fail.exited()).code).toBe(ExitCode.Held)
      expect((await wait.exited()).code).toBe(ExitCode.Held)
      expect(skip.stderr).toMatch(/"outcome":"held"/)
      holder.child.kill('SIGTERM')
      expect((await holder.exited()).code).toBe(143)
      expect(log.notes().map((note) => note.id)).not.toContain('skip')
      expect(log.notes().filter((note) => ['fail', 'wait'].includes(note.id))).toEqual([])
    })

    it('usage errors exit 2, a missing command 127 and one that cannot run 126, all before taking the lock', async () => {
      const lockKey = key()
      for (const args of [
        ['--key', lockKey],
        ['--key', lockKey, '--on-held', 'maybe', '--', 'true'],
        ['--key', lockKey, '--on-held', 'wait', '--', 'true'],
        ['--key', lockKey, '--ttl', '1s', '--', 'true'],
      ]) {
        const run = exec(args)
        expect((await run.exited()).code, args.join(' ')).toBe(ExitCode.Usage)
      }
      expect((await cli('inspect', '--key', lockKey)).code).toBe(ExitCode.NotFound)
      for (const command of ['/nonexistent/command', 'no-such-command-on-path']) {
        const missing = exec(['--key', lockKey, '--', command])
        expect((await missing.exited()).code, command).toBe(ExitCode.CommandNotFound)
        expect(missing.stderr).toMatch(/cannot run .*; the lock was not taken/)
      }
      const cannotRun = exec(['--key', lockKey, '--', notExecutable()])
      expect((await cannotRun.exited()).code).toBe(ExitCode.CannotRun)
      // Nothing written: no run was recorded, so none counts as failed.
      expect((await cli('inspect', '--key', lockKey)).code).toBe(ExitCode.NotFound)
    })

    it('forwards SIGTERM to the command, and releases after it exits', async () => {
      const log = new JobLog()
      const lockKey = key()
      const run = exec(['--key', lockKey, '--', ...log.job('stopped', { sleepMs: 60_000 })])
      await log.waitFor((note) => note.what === 'start')
      run.child.kill('SIGTERM')
      expect((await run.exited()).code).toBe(143) // the command's own status: 128 + SIGTERM
      expect(log.notes().map((note) => note.what)).toEqual(['start', 'SIGTERM', 'end'])
      expect((await record(lockKey)).expires_at).toBe(0)
    })

    it('a stolen lease: SIGTERM within a heartbeat, SIGKILL after --kill-after, exit 8', async () => {
      const log = new JobLog()
      const lockKey = key()
      const args = ['--key', lockKey, '--ttl', '6s', '--kill-after', '2s', '--']
      const run = exec([...args, ...log.job('victim', { sleepMs: 120_000, ignoreTerm: true })])
      const start = await log.waitFor((note) => note.what === 'start')
      const stolenAt = Date.now()
      const stolen = await forceRelease(lockKey)
      expect(stolen.code, stolen.stderr).toBe(ExitCode.Ok)
      const term = await log.waitFor((note) => note.what === 'SIGTERM')
      const { code } = await run.exited()
      const endedAt = Date.now()
      expect(code).toBe(ExitCode.Lost)
      expect(alive(start.pid)).toBe(false) // it ignored SIGTERM: SIGKILL ended it
      expect(log.notes().map((note) => note.what)).toEqual(['start', 'SIGTERM'])
      expect(term.at - stolenAt).toBeLessThan(60_000)
      expect(run.stderr).toMatch(/LEASE LOST|"outcome":"released-by-operator"/)
      measured(`${engine.name}: force-release -> SIGTERM (heartbeat 2 s)`, term.at - stolenAt)
      measured(`${engine.name}: SIGTERM -> wrapper exit (--kill-after 2 s)`, endedAt - term.at)
    })

    it('a SIGKILLed wrapper takes its command along, and frees the lock when its lease ends', async () => {
      const log = new JobLog()
      const lockKey = key()
      const first = exec(['--key', lockKey, '--ttl', '5s', '--', ...log.job('crashed', { sleepMs: 120_000 })])
      const crashed = await log.waitFor((note) => note.what === 'start')
      await first.commandStarted()
      first.child.kill('SIGKILL')
      await first.exited()
      const killedAt = Date.now()
      await until(() => !running(crashed.pid), 2_000, 'the command outlived its killed wrapper')
      const orphanGoneAt = Date.now()
      const next = exec([
        '--key',
        lockKey,
        '--on-held',
        'wait',
        '--wait',
        '120s',
        '--',
        ...log.job('next', { sleepMs: 0 }),
      ])
      expect((await next.exited()).code).toBe(0)
      const took = await log.waitFor((note) => note.id === 'next' && note.what === 'start')
      expect(Number(took.token)).toBeGreaterThan(Number(crashed.token))
      expect(took.at).toBeGreaterThan(killedAt)
      expect(took.at).toBeGreaterThan(orphanGoneAt)
      measured(`${engine.name}: wrapper SIGKILL -> its command gone`, orphanGoneAt - killedAt)
      measured(
        `${engine.name}: wrapper SIGKILL -> next command starts (ttl 5 s, margin 2 s)`,
        took.at - killedAt,
      )
    })

    it('a lease lost while the command ran, noticed only by the release, exits 8', async () => {
      const log = new JobLog()
      const lockKey = key()
      // --ttl 60s: the next renewal is 20 s away, after the command's end; only the release can tell.
      const run = exec(['--key', lockKey, '--', ...log.job('unaware', { sleepMs: 6_000 })])
      await log
        .waitFor((note) => note.what === 'start', 40_000)
        .catch((error) => {
          throw new Error(`${String(error)}\nexec's stderr:\n${run.stderr}`)
        })
      expect((await forceRelease(lockKey)).code).toBe(ExitCode.Ok)
      expect(log.notes().map((note) => note.what)).toEqual(['start']) // still running: the loss is news at its end
      const { code } = await within(40_000, () => `exec exit; its stderr:\n${run.stderr}`, run.exited())
      expect(log.notes().map((note) => note.what)).toEqual(['start', 'end'])
      expect(run.stderr).toMatch(/"outcome":"(lost|released-by-operator)"/)
      expect(code, run.stderr).toBe(ExitCode.Lost)
    })

    // SIGHUP too: a closed terminal or ssh session must not kill the wrapper and leave the lock held.
    it.each(['SIGTERM', 'SIGHUP'] as const)(
      '%s while waiting for the lock: the command never runs, no failed run is recorded, exit 130',
      async (signal) => {
        const log = new JobLog()
        const lockKey = key()
        const holder = exec(['--key', lockKey, '--', ...log.job('holder', { sleepMs: 6_000 })])
        await log.waitFor((note) => note.id === 'holder' && note.what === 'start')
        const waiter = exec([
          '--key',
          lockKey,
          '--on-held',
          'wait',
          '--wait',
          '120s',
          '--pause-after-failures',
          '1',
          '--',
          ...log.job('waiter'),
        ])
        await talkingToStore(waiter.child.pid ?? 0) // acquiring, so waiting: the holder runs 6 s
        waiter.child.kill(signal)
        const { code } = await waiter.exited()
        expect(code, waiter.stderr).toBe(ExitCode.Interrupted)
        // The wait is cut short: the waiter is gone while the holder still runs.
        expect(log.notes().some((note) => note.id === 'holder' && note.what === 'end')).toBe(false)
        expect((await holder.exited()).code).toBe(0)
        expect(log.notes().filter((note) => note.id === 'waiter')).toEqual([])
        const stored = await record(lockKey)
        expect(stored).not.toHaveProperty('paused')
        expect(stored).not.toHaveProperty('failures')
        expect(stored.history?.map((entry) => entry.outcome)).toEqual(['completed']) // the holder's
        expect(stored.expires_at).toBe(0)
        expect(waiter.stderr).not.toMatch(/"level":"ERROR"/)
      },
    )

    it('a SIGHUP that comes once the lock is released changes nothing: exec exits with the command status', async () => {
      const log = new JobLog()
      const lockKey = key()
      const tick = '2026-01-01T00:00:00Z'
      const run = exec(['--key', lockKey, '--tick', tick, '--', ...log.job('a', { exitCode: 3 })])
      let sent = false
      // The moment the release is said: the wrapper winds down, and must not die of the signal.
      run.child.stderr?.on('data', () => {
        if (sent || !run.stderr.includes('"outcome":"released"')) return
        sent = true
        run.child.kill('SIGHUP')
      })
      const { code, signal } = await run.exited()
      expect(sent).toBe(true)
      expect({ code, signal }, run.stderr).toEqual({ code: 3, signal: null })
      expect((await record(lockKey)).expires_at).toBe(0)
    })

    it('a stderr whose reader went away (a closed terminal, a tee that died) changes nothing: exec exits with the command status, the lock released', async () => {
      const log = new JobLog()
      const lockKey = key()
      const run = exec(['--key', lockKey, '--', ...log.job('a', { exitCode: 3, sleepMs: 500 })])
      // The first line read, the reader goes: every line after it meets a closed pipe (EPIPE).
      run.child.stderr?.once('data', () => run.child.stderr?.destroy())
      const { code, signal } = await run.exited()
      expect({ code, signal }).toEqual({ code: 3, signal: null })
      expect(log.notes().map((note) => note.what)).toEqual(['start', 'end'])
      expect((await record(lockKey)).expires_at).toBe(0)
    })

    it("an exec that cannot start names its key in its error line, where the task's metric filters read it", async () => {
      const lockKey = key()
      const noRegion = Object.fromEntries(
        Object.entries(engine.env()).filter(([name]) => name !== 'AWS_REGION'),
      )
      const run = new RunningExec([...engine.store(), '--key', lockKey, '--json', '--', 'true'], noRegion)
      expect((await run.exited()).code).toBe(ExitCode.Configuration)
      const lines = run.stderr.split('\n').filter(Boolean)
      expect(lines.map((line) => JSON.parse(line))).toContainEqual(
        expect.objectContaining({
          key: lockKey,
          error: expect.objectContaining({ exitCode: ExitCode.Configuration }),
        }),
      )
    })

    it('--tick: a tick that completed is skipped; a failed one is not recorded and runs again', async () => {
      const log = new JobLog()
      const lockKey = key()
      const tick = (id: string, at: string, exitCode = 0) =>
        exec(['--key', lockKey, '--tick', at, '--', ...log.job(id, { exitCode })])
      expect((await tick('t1', '2026-11-21T03:00:00Z').exited()).code).toBe(0)
      expect((await record(lockKey)).last_run).toBe('2026-11-21T03:00:00Z')
      const again = tick('t1-again', '2026-11-21T03:00:00Z')
      expect((await again.exited()).code).toBe(0)
      expect(again.stderr).toMatch(/"outcome":"duplicate"/)
      expect((await tick('older', '2026-11-21T02:00:00Z').exited()).code).toBe(0)
      expect((await tick('t2-fails', '2026-11-21T04:00:00Z', 5).exited()).code).toBe(5)
      expect((await record(lockKey)).last_run).toBe('2026-11-21T03:00:00Z')
      expect((await tick('t2-retry', '2026-11-21T04:00:00Z').exited()).code).toBe(0)
      expect((await record(lockKey)).last_run).toBe('2026-11-21T04:00:00Z')
      const ran = log.notes().filter((note) => note.what === 'start')
      expect(ran.map((note) => [note.id, note.tick])).toEqual([
        ['t1', '2026-11-21T03:00:00Z'],
        ['t2-fails', '2026-11-21T04:00:00Z'],
        ['t2-retry', '2026-11-21T04:00:00Z'],
      ])
    })
    it('--max-tick-age: a tick delivered too late exits 0 without running the command or asking the store', async () => {
      const log = new JobLog()
      const lockKey = key()
      const old = new Date(Date.now() - 2 * 3_600_000).toISOString()
      const late = exec(['--key', lockKey, '--tick', old, '--max-tick-age', '1h', '--', ...log.job('late')])
      expect((await late.exited()).code).toBe(0)
      expect(late.stderr).toMatch(/"outcome":"late"/)
      expect(log.notes()).toEqual([])
      const shown = await cli('inspect', '--key', lockKey)
      expect(shown.code).toBe(ExitCode.NotFound) // nothing was written
    })

    it('--pause-after-failures: the job pauses itself after N failed runs; paused runs exit 0 unrun; resume runs again', async () => {
      const log = new JobLog()
      const lockKey = key()
      const run = (id: string, exitCode = 0) =>
        exec(['--key', lockKey, '--pause-after-failures', '2', '--', ...log.job(id, { exitCode })])
      expect((await run('fail-1', 3).exited()).code).toBe(3)
      const second = run('fail-2', 3)
      expect((await second.exited()).code).toBe(3)
      expect(second.stderr).toMatch(/paused after 2 failed runs in a row/)
      const paused = run('while-paused')
      expect((await paused.exited()).code).toBe(0)
      expect(paused.stderr).toMatch(/"outcome":"paused"/)
      expect((await cli('resume', '--key', lockKey)).code).toBe(ExitCode.Ok)
      expect((await run('after-resume').exited()).code).toBe(0)
      expect(
        log
          .notes()
          .filter((note) => note.what === 'start')
          .map((note) => note.id),
      ).toEqual(['fail-1', 'fail-2', 'after-resume'])
    })
  })
}
