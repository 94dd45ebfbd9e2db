/** What a soak run came to, in figures: for results.json and for the console. */
import type { Violation } from './checker.js'
import type { SoakEvent } from './events.js'
import { buildHistory } from './history.js'

export interface Summary {
  readonly runSeconds: number
  readonly acquisitions: number
  /** `lock.attempt` outcomes: acquired, held, error. */
  readonly attempts: Record<string, number>
  readonly faults: Record<string, number>
  /** fencedPut outcomes: ok, rejected, error. */
  readonly writes: Record<string, number>
  /** fencedPut calls begun after their lease had ended (SIGSTOP, slow steps, expiry), by outcome. */
  readonly zombieWrites: Record<string, number>
  /**
   * Zombie writes that landed although a newer token had been handed out before they began: the
   * newer holder had not written that object yet, so no fence could refuse them (no violation).
   */
  readonly zombieWritesAfterNewerToken: number
  /** Errors by call and error name, e.g. `acquire LockStoreError`. */
  readonly errors: Record<string, number>
  /** Errors that are not the library's typed ones: a failure path that escaped its types. */
  readonly untypedErrors: number
  readonly violations: number
  readonly violationsByKind: Record<string, number>
}

/** The library's own error names; anything else reaching a caller is untyped. */
const TYPED = /^(Lock\w*Error|FencedWriteRejectedError)$/

function count(into: Record<string, number>, name: string): void {
  into[name] = (into[name] ?? 0) + 1
}

export function summarize(events: readonly SoakEvent[], violations: readonly Violation[]): Summary {
  const history = buildHistory([...events].sort((a, b) => a.t - b.t))
  const attempts: Record<string, number> = {}
  const faults: Record<string, number> = {}
  const writes: Record<string, number> = {}
  const zombieWrites: Record<string, number> = {}
  const errors: Record<string, number> = {}
  let untypedErrors = 0
  for (const event of events) {
    if (event.type === 'fault') count(faults, event.kind)
    if (!('error' in event) || event.error === undefined) continue
    const name = event.error.split(':')[0] ?? 'Error'
    count(errors, `${event.type} ${name}`)
    if (!TYPED.test(name)) untypedErrors++
  }
  for (const { end } of history.acquires) if (end) count(attempts, end.status ?? 'unknown')
  let zombieWritesAfterNewerToken = 0
  for (const { start, end } of history.writes) {
    const outcome = end?.outcome ?? 'unfinished'
    count(writes, outcome)
    const lease = history.leaseById.get(start.lease)
    if (!lease || start.t < lease.end) continue
    count(zombieWrites, outcome)
    const newer = history.leases.some(
      (l) => l.key === lease.key && l.token > lease.token && l.start < start.t,
    )
    if (outcome === 'ok' && newer) zombieWritesAfterNewerToken++
  }
  const violationsByKind: Record<string, number> = {}
  for (const violation of violations) count(violationsByKind, violation.kind)
  return {
    runSeconds: Math.round((history.runEnd - history.runStart) / 100) / 10,
    acquisitions: history.leases.length,
    attempts,
    faults,
    writes,
    zombieWrites,
    zombieWritesAfterNewerToken,
    errors,
    untypedErrors,
    violations: violations.length,
    violationsByKind,
  }
}

const line = (record: Record<string, number>): string =>
  Object.entries(record)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, n]) => `${name} ${n}`)
    .join(', ') || 'none'

/** The console report; its last line is `violations: N`. */
export function formatSummary(summary: Summary, violations: readonly Violation[]): string {
  const shown = violations.slice(0, 20).map((v) => `  ${v.kind}: ${v.message}`)
  if (violations.length > shown.length) shown.push(`  … and ${violations.length - shown.length} more`)
  return [
    `run: ${summary.runSeconds} s`,
    `acquisitions: ${summary.acquisitions} (attempts: ${line(summary.attempts)})`,
    `faults: ${line(summary.faults)}`,
    `fenced writes: ${line(summary.writes)}; by zombies: ${line(summary.zombieWrites)}`,
    `zombie writes that landed after a newer token was handed out, before its holder wrote there: ${summary.zombieWritesAfterNewerToken}`,
    `errors: ${line(summary.errors)}`,
    `untyped errors: ${summary.untypedErrors}`,
    ...shown,
    `violations: ${summary.violations}${summary.violations ? ` (${line(summary.violationsByKind)})` : ''}`,
  ].join('\n')
}
