// `exec --on-held replace` as two real processes against a real engine (Ceph's S3 or DynamoDB
// Local): a run of a newer tick takes the lock from a run of an older one. The jobs write to a
// target fenced by their tokens (fixtures/fenced-job.ts). Delays are measured and printed, not
// bounded: the machine is shared.
import { randomUUID } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { ExitCode } from '../../lib/cli/main.js'
import { runCliProgram } from '../support/cli.js'
import { JobLog, RunningExec } from '../support/exec.js'
import type { ExecEngine } from './exec-suite.js'

export interface ReplaceEngine extends ExecEngine {
  /** Where the fenced job writes: `s3 BUCKET KEY`, or `dynamodb TABLE PARTITION_KEY KEY`. */
  readonly fencedTarget: (name: string) => string[]
}

const measured = (what: string, ms: number) => console.info(`[replace measure] ${what}: ${Math.round(ms)} ms`)

const T1 = '2026-11-25T03:00:00Z'
const T2 = '2026-11-25T03:05:00Z'

export function execReplaceSuite(engine: ReplaceEngine) {
  const exec = (args: readonly string[]) => new RunningExec([...engine.store(), ...args], engine.env())
  const cli = (...args: string[]) => runCliProgram([...args, ...engine.store()], engine.env())
  const stored = async (lockKey: string) => {
    const { code, stdout, stderr } = await cli('inspect', '--key', lockKey, '--json')
    if (code !== 0) throw new Error(`inspect exited ${code}: ${stderr}`)
    return JSON.parse(stdout).record
  }

  describe(`lambda-singleton exec --on-held replace on ${engine.name}`, () => {
    it("a newer tick replaces the running command: SIGTERM within a heartbeat, its fenced writes refused from the newer holder's first", async () => {
      const log = new JobLog()
      const lockKey = `locks/replace-${randomUUID().slice(0, 8)}`
      const target = engine.fencedTarget(`targets/${lockKey}`)
      const replace = (tick: string) => [
        '--key',
        lockKey,
        '--ttl',
        '4s',
        '--on-held',
        'replace',
        '--tick',
        tick,
      ]
      // The old run ignores SIGTERM, as a job stuck in a write would: it writes on until the newer
      // run has written, and three times more (fixtures/fenced-job.ts). --kill-after is only a
      // backstop: its SIGKILL, after SIGTERM, came before the newer run's first write on a loaded
      // machine, and left no old write to check.
      const old = exec([
        ...replace(T1),
        '--kill-after',
        '60s',
        '--',
        ...log.fencedJob('old', target, { writeForMs: 120_000, ignoreTerm: true }),
      ])
      await log.waitFor((note) => note.id === 'old' && note.what === 'write' && note.ok === true, 20_000)
      const replacingAt = Date.now()
      const newer = exec([...replace(T2), '--', ...log.fencedJob('new', target, { writeForMs: 6_000 })])
      const firstNew = await log.waitFor(
        (note) => note.id === 'new' && note.what === 'write' && note.ok === true,
      )
      const term = await log.waitFor((note) => note.id === 'old' && note.what === 'SIGTERM')
      const [oldExit, newExit] = await Promise.all([old.exited(), newer.exited()])
      expect(oldExit.code, old.stderr).toBe(ExitCode.Lost)
      expect(newExit.code, newer.stderr).toBe(0)

      const notes = log.notes()
      const [oldStart, newStart] = ['old', 'new'].map((id) =>
        notes.find((note) => note.id === id && note.what === 'start'),
      )
      expect(Number(newStart?.token)).toBeGreaterThan(Number(oldStart?.token))
      const oldWrites = notes.filter((note) => note.id === 'old' && note.what === 'write')
      const afterNew = oldWrites.filter((note) => note.at > firstNew.at)
      // Every write of the old run after the newer holder's first was refused, and there were some.
      expect(afterNew.length).toBeGreaterThan(0)
      expect(afterNew.every((note) => note.ok === false)).toBe(true)
      expect(notes.filter((note) => note.id === 'new' && note.what === 'write').every((n) => n.ok)).toBe(true)

      // The record: the newer run completed; the old one is in the history as replaced; the old
      // wrapper's release (after its command died) changed nothing.
      const record = await stored(lockKey)
      expect(record).toMatchObject({ token: Number(newStart?.token), expires_at: 0, last_run: T2 })
      expect(record.replaced).toMatchObject({ token: Number(oldStart?.token), tick: T1 })
      expect(record.history.map((entry: { outcome: string }) => entry.outcome)).toEqual([
        'replaced',
        'completed',
      ])
      expect(old.stderr).toMatch(/"outcome":"replaced"/)
      expect(old.stderr).toMatch(/stopping the command: the lease was replaced by a run of a newer tick/)
      expect(newer.stderr).toMatch(/"outcome":"acquired".*"replaced":\{/)

      const replacedAt = record.replaced.at * 1_000 // the replacing write, by the store's clock
      measured(
        `${engine.name}: replacing write -> SIGTERM to the old command (ttl 4 s: heartbeat 1.3 s)`,
        term.at - replacedAt,
      )
      measured(
        `${engine.name}: replacing exec started -> SIGTERM (process start included)`,
        term.at - replacingAt,
      )
      console.info(
        `[replace measure] ${engine.name}: old run's writes: ok ${oldWrites.filter((n) => n.ok).length}, refused ${oldWrites.filter((n) => n.ok === false).length} (${afterNew.length} after the newer holder's first write, all refused); tokens ${oldStart?.token} -> ${newStart?.token}`,
      )
    })

    it('a second delivery of the running tick, or an older one, does not replace: it skips', async () => {
      const log = new JobLog()
      const lockKey = `locks/replace-${randomUUID().slice(0, 8)}`
      const target = engine.fencedTarget(`targets/${lockKey}`)
      const replace = (tick: string) => ['--key', lockKey, '--on-held', 'replace', '--tick', tick, '--']
      const running = exec([...replace(T2), ...log.fencedJob('running', target, { writeForMs: 60_000 })])
      await log.waitFor((note) => note.id === 'running' && note.what === 'start')
      for (const tick of [T2, T1]) {
        const skipped = exec([...replace(tick), ...log.job(`late-${tick}`)])
        expect((await skipped.exited()).code).toBe(0)
        expect(skipped.stderr).toMatch(/"outcome":"held"/)
      }
      expect(log.notes().some((note) => note.what === 'SIGTERM')).toBe(false)
      running.child.kill('SIGTERM')
      await running.exited()
    })

    it('--on-held replace without --tick is a usage error', async () => {
      const refused = exec(['--key', 'locks/x', '--on-held', 'replace', '--', 'true'])
      expect((await refused.exited()).code).toBe(ExitCode.Usage)
      expect(refused.stderr).toMatch(/--on-held replace needs --tick/)
    })
  })
}
