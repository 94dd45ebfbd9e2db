/**
 * The verdict on a soak's event log: the checker's violations and the run's figures, as text
 * ending in `violations: N` and as an exit code; with a report folder, also results.json and
 * timeline.svg there.
 */
import { writeFileSync } from 'node:fs'
import { check } from './checker.js'
import type { SoakEvent } from './events.js'
import { formatSummary, type Summary, summarize } from './summary.js'
import { drawTimeline } from './timeline.js'

export interface JudgeOptions {
  readonly boundSlackMs: number
  /** Fewer acquisitions than this fails the run: it did too little to prove anything. */
  readonly minAcquisitions?: number
  /** Where to write results.json and timeline.svg. */
  readonly reportDir?: string
  /** Stored in results.json as they are: the run's settings and the harness's own counts. */
  readonly context?: Record<string, unknown>
}

export interface Verdict {
  /** 1 when a violation was found or the run fell short of `minAcquisitions`. */
  readonly code: 0 | 1
  readonly summary: Summary
  /** For the console; the last line is `violations: N`. */
  readonly text: string
}

export function judge(events: readonly SoakEvent[], options: JudgeOptions): Verdict {
  const violations = check(events, { boundSlackMs: options.boundSlackMs })
  const summary = summarize(events, violations)
  const lines: string[] = []
  if (options.reportDir) {
    const results = { ...options.context, boundSlackMs: options.boundSlackMs, summary, violations }
    writeFileSync(`${options.reportDir}/results.json`, `${JSON.stringify(results, null, 2)}\n`)
    writeFileSync(`${options.reportDir}/timeline.svg`, drawTimeline(events))
    lines.push(`soak: results in ${options.reportDir}/ (events.jsonl, results.json, timeline.svg)`)
  }
  const { minAcquisitions } = options
  const short = minAcquisitions !== undefined && summary.acquisitions < minAcquisitions
  if (short) {
    lines.push(
      `soak: FAILED: ${summary.acquisitions} acquisitions, below the ${minAcquisitions} this run must reach`,
    )
  }
  lines.push(`call bounds: waitMs / timeoutMs + ${options.boundSlackMs} ms of slack, paused time not counted`)
  lines.push(formatSummary(summary, violations))
  return { code: violations.length > 0 || short ? 1 : 0, summary, text: lines.join('\n') }
}
