import { setTimeout as sleep } from 'node:timers/promises'
import { expect, it } from 'vitest'
import { ExitCode } from '../../lib/cli/main.js'
import { Lock } from '../../lib/index.js'
import { keepHistory } from '../../lib/schedule/history.js'
import type { CliEngine } from '../support/cli-engines.js'
import { leaseOf } from '../support/lease-of.js'

/** `lambda-singleton history` against a real engine, run as the program operators run. */
export function historySuite(engine: () => CliEngine): void {
  const lock = (key: string, owner: string, ttlMs = 600_000) =>
    new Lock({
      store: engine().store(),
      key,
      owner,
      ttlMs,
      clockSkewMarginMs: 500,
      recordRun: keepHistory(10),
    })

  it('prints the runs the record keeps: completed, failed and abandoned, oldest first, as a table and as JSON', async () => {
    const { program, cli, stored } = engine()
    const key = `locks/history-${Date.now()}`
    await (await leaseOf(lock(key, 'job/1').tryAcquire()))?.release({
      outcome: 'completed',
      tick: '2026-11-21T03:00:00Z',
    })
    await (await leaseOf(lock(key, 'job/2').tryAcquire()))?.release({ outcome: 'failed' })
    // A run that crashed: its lease (2.5 s) runs out, and the next run takes over and says so.
    await leaseOf(lock(key, 'job/3', 2_500).tryAcquire())
    await sleep(3_500)
    // Its record runs 2.5 s from its token, up to a second ahead of the store's clock when written.
    await (await leaseOf(lock(key, 'job/4').tryAcquire({ waitMs: 5_000 })))?.release({
      outcome: 'completed',
      tick: '2026-11-21T05:00:00Z',
    })
    const record = await stored(key)
    expect(record?.history?.map((run) => [run.owner, run.outcome])).toEqual([
      ['job/1', 'completed'],
      ['job/2', 'failed'],
      ['job/3', 'abandoned'],
      ['job/4', 'completed'],
    ])

    const shown = await program('history', '--key', key)
    expect(shown).toMatchObject({ code: ExitCode.Ok, stderr: '' })
    const rows = shown.stdout.trimEnd().split('\n')
    expect(rows[0]?.split(/\s{2,}/)).toEqual([
      'TOKEN',
      'TICK',
      'OWNER',
      'STARTED',
      'ENDED',
      'DURATION',
      'OUTCOME',
    ])
    const iso = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/
    const cells = rows.slice(1).map((row) => row.split(/\s{2,}/))
    expect(cells.map(([token, tick, owner, , , , outcome]) => [Number(token), tick, owner, outcome])).toEqual(
      (record?.history ?? []).map((run) => [run.token, run.tick ?? '-', run.owner, run.outcome]),
    )
    for (const [, , , started, ended, duration] of cells) {
      expect(started).toMatch(iso)
      expect(ended).toMatch(iso)
      expect(duration).toMatch(/^\d+(ms|s)$/)
    }

    const json = JSON.parse((await cli('history', '--key', key, '--json')).out)
    expect(json.key).toBe(key)
    expect(json.runs.map((run: { outcome: string }) => run.outcome)).toEqual([
      'completed',
      'failed',
      'abandoned',
      'completed',
    ])
    expect(json.runs[2]).toMatchObject({ owner: 'job/3', durationMs: expect.any(Number) })
    expect(json.runs[2]).not.toHaveProperty('tick')
    // inspect --json carries the record, history included.
    const inspected = JSON.parse((await cli('inspect', '--key', key, '--json')).out)
    expect(inspected.record.history).toEqual(record?.history)
  })

  it('exits 3 for a key with no lock, and prints a line for a record without runs', async () => {
    const { cli } = engine()
    const missing = await cli('history', '--key', `locks/never-${Date.now()}`)
    expect(missing.code).toBe(ExitCode.NotFound)
    const key = `locks/no-history-${Date.now()}`
    const plain = new Lock({ store: engine().store(), key, owner: 'job/1' })
    await (await leaseOf(plain.tryAcquire()))?.release({ outcome: 'completed' })
    expect(await cli('history', '--key', key)).toEqual({
      code: ExitCode.Ok,
      out: `${key}: no runs recorded (runs are kept from releases with historySize above 0, the default 10)`,
      err: '',
    })
  })
}
