import { describe, expect, it } from 'vitest'
import { historyTable, runViewsOf } from '../../lib/cli/format.js'
import type { LockRecord } from '../../lib/extend.js'

const at = Date.parse('2026-11-21T03:00:00Z') / 1000
const record: LockRecord = {
  v: 1,
  token: 1_800_000_300_000,
  expires_at: 0,
  owner: 'nightly-report/c3',
  history: [
    {
      token: 1_800_000_100_000,
      tick: '2026-11-21T03:00:00Z',
      owner: 'nightly-report/a1',
      started: at,
      ended: at + 0.42,
      outcome: 'completed',
    },
    {
      token: 1_800_000_200_000,
      owner: 'nightly-report/b2',
      started: at + 3_600,
      ended: at + 3_600 + 900,
      outcome: 'abandoned',
    },
    {
      token: 1_800_000_300_000,
      tick: '2026-11-21T05:00:00Z',
      owner: 'nightly-report/c3',
      started: at + 7_200,
      ended: at + 7_200 + 245,
      outcome: 'failed',
    },
  ],
}

describe('lambda-singleton history: what it prints', () => {
  it('turns each run into ISO times and a duration, oldest first, as the record keeps them', () => {
    expect(runViewsOf(record)).toEqual([
      {
        token: 1_800_000_100_000,
        tick: '2026-11-21T03:00:00Z',
        owner: 'nightly-report/a1',
        started: '2026-11-21T03:00:00.000Z',
        ended: '2026-11-21T03:00:00.420Z',
        durationMs: 420,
        outcome: 'completed',
      },
      {
        token: 1_800_000_200_000,
        owner: 'nightly-report/b2',
        started: '2026-11-21T04:00:00.000Z',
        ended: '2026-11-21T04:15:00.000Z',
        durationMs: 900_000,
        outcome: 'abandoned',
      },
      {
        token: 1_800_000_300_000,
        tick: '2026-11-21T05:00:00Z',
        owner: 'nightly-report/c3',
        started: '2026-11-21T05:00:00.000Z',
        ended: '2026-11-21T05:04:05.000Z',
        durationMs: 245_000,
        outcome: 'failed',
      },
    ])
  })

  it('prints a table: token, tick, owner, started, ended, duration, outcome', () => {
    const lines = historyTable('locks/nightly-report', runViewsOf(record))
    expect(lines.map((line) => line.split(/\s{2,}/))).toEqual([
      ['TOKEN', 'TICK', 'OWNER', 'STARTED', 'ENDED', 'DURATION', 'OUTCOME'],
      [
        '1800000100000',
        '2026-11-21T03:00:00Z',
        'nightly-report/a1',
        '2026-11-21T03:00:00.000Z',
        '2026-11-21T03:00:00.420Z',
        '420ms',
        'completed',
      ],
      [
        '1800000200000',
        '-',
        'nightly-report/b2',
        '2026-11-21T04:00:00.000Z',
        '2026-11-21T04:15:00.000Z',
        '15m 00s',
        'abandoned',
      ],
      [
        '1800000300000',
        '2026-11-21T05:00:00Z',
        'nightly-report/c3',
        '2026-11-21T05:00:00.000Z',
        '2026-11-21T05:04:05.000Z',
        '4m 05s',
        'failed',
      ],
    ])
    // Columns line up: every outcome starts at the same place.
    expect(new Set(lines.map((line) => line.search(/\S+$/))).size).toBe(1)
  })

  it('says so when the record keeps no runs', () => {
    const { history: _, ...none } = record
    expect(historyTable('locks/x', runViewsOf(none as LockRecord))).toEqual([
      'locks/x: no runs recorded (runs are kept from releases with historySize above 0, the default 10)',
    ])
  })
})
