import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { judge } from '../../scripts/soak/report.js'
import { Log } from './log.js'

const lastLine = (text: string) => text.trim().split('\n').at(-1)

describe('the soak verdict', () => {
  it('ends with "violations: N" and fails the run when N > 0', () => {
    const log = new Log()
    log.acquire('w0.0', 'k0', 1, 100, 3_100)
    log.acquire('w1.0', 'k0', 1, 2_000, 5_000)
    const verdict = judge(log.end(6_000), { boundSlackMs: 500 })
    expect(lastLine(verdict.text)).toBe('violations: 2 (overlap 1, token-reused 1)')
    expect(verdict.text).toContain('overlap: k0: w1.0/1 (token 1')
    expect(verdict.code).toBe(1)
  })

  it('passes a clean run, and fails one with fewer acquisitions than it must reach', () => {
    const log = new Log()
    log.acquire('w0.0', 'k0', 1, 100, 3_100)
    const events = log.end(4_000)
    const clean = judge(events, { boundSlackMs: 500, minAcquisitions: 1 })
    expect(lastLine(clean.text)).toBe('violations: 0')
    expect(clean.code).toBe(0)
    const short = judge(events, { boundSlackMs: 500, minAcquisitions: 2 })
    expect(short.text).toContain('FAILED: 1 acquisitions, below the 2 this run must reach')
    expect(short.code).toBe(1)
  })

  it('writes results.json and timeline.svg into the report folder', () => {
    const dir = mkdtempSync(join(tmpdir(), 'soak-report-'))
    const log = new Log()
    log.acquire('w0.0', 'k0', 1, 100, 3_100)
    log.fault('kill', 'w0.0', 200)
    judge(log.end(4_000), { boundSlackMs: 500, reportDir: dir, context: { seed: 7 } })
    const results = JSON.parse(readFileSync(join(dir, 'results.json'), 'utf8'))
    expect(results).toMatchObject({
      seed: 7,
      summary: { acquisitions: 1, faults: { kill: 1 }, violations: 0 },
    })
    expect(readFileSync(join(dir, 'timeline.svg'), 'utf8')).toContain('<svg')
  })
})
