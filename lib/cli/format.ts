import type { LockInfo } from '../core/lock-options.js'
import type { HistoryEntry, LockRecord } from '../core/record.js'
import { type PauseView, pauseView } from '../schedule/pause.js'
import { isoFromSeconds } from '../schedule/time.js'
import { printable } from './printable.js'

/** One lock as the CLI shows it, in JSON as in tables. */
export interface LockView {
  readonly key: string
  readonly held: boolean
  readonly token: number
  /** The record's `run` counter, when it has a numeric one. */
  readonly run?: number
  /** The holder, or the last holder of a lock that is not held. */
  readonly owner: string
  /** ISO time of `expires_at`; null once released (`released` says so), not the epoch. */
  readonly expiresAt: string | null
  readonly released: boolean
  /** `expires_at` minus the store's clock now (negative once past), when the store told its time. */
  readonly expiresInMs?: number
  readonly acquiredAt?: string
  readonly lastRun?: string
  /** Why no acquisition can take this record (see `LockInfo.blocked`). */
  readonly blocked?: string
  /** Set while the job is paused: who paused it, when (ISO 8601) and why. */
  readonly paused?: PauseView
  /** Failed runs in a row, when the record counts some. */
  readonly failures?: number
}

/** A key whose object could not be read as a lock record. */
export interface UnreadableView {
  readonly key: string
  readonly error: { readonly name: string; readonly message: string }
}

export function viewOf(key: string, info: LockInfo, serverNow: number | undefined): LockView {
  const { record } = info
  const released = record.expires_at === 0
  return {
    key,
    held: info.held,
    token: info.token,
    ...(typeof record.run === 'number' && { run: record.run }),
    owner: info.owner,
    expiresAt: released ? null : info.expiresAt.toISOString(),
    released,
    ...(!released &&
      serverNow !== undefined && { expiresInMs: Math.round(record.expires_at * 1000 - serverNow) }),
    ...(record.acquired_at !== undefined && {
      acquiredAt: isoFromSeconds(record.acquired_at),
    }),
    ...(record.last_run !== undefined && { lastRun: record.last_run }),
    ...(info.blocked && { blocked: info.blocked }),
    ...(record.paused && {
      paused: pauseView(record.paused),
    }),
    ...(record.failures !== undefined && { failures: record.failures }),
  }
}

/** The human form of one lock: a line per field. */
export function lockLines(view: LockView, record: LockRecord, etag: string): string[] {
  const fields: [string, string | undefined][] = [
    ['key', view.key],
    ['state', stateOf(view)],
    [view.held ? 'holder' : 'last holder', view.owner],
    ['token', String(view.token)],
    ['run', view.run === undefined ? undefined : String(view.run)],
    ['expires', expiryOf(view)],
    ['acquired', view.acquiredAt],
    ['ttl', record.ttl_ms === undefined ? undefined : duration(record.ttl_ms)],
    ['last run', view.lastRun],
    ['paused', view.paused && pausedText(view.paused)],
    ['failures', view.failures === undefined ? undefined : `${view.failures} in a row`],
    ['etag', etag],
  ]
  const shown = fields.filter((field): field is [string, string] => field[1] !== undefined)
  const width = Math.max(...shown.map(([name]) => name.length)) + 2
  return shown.map(([name, value]) => `${name.padEnd(width)}${printable(value)}`)
}

/** The human form of many locks: a table, then a line per key that could not be read. */
export function lockTable(locks: readonly (LockView | UnreadableView)[]): string[] {
  const views = locks.filter((lock): lock is LockView => !('error' in lock))
  const withRun = views.some((view) => view.run !== undefined)
  const header = ['KEY', 'STATE', 'HOLDER', 'TOKEN', ...(withRun ? ['RUN'] : []), 'EXPIRES', 'LAST RUN']
  const rows = locks.map((lock) => {
    if ('error' in lock) return [lock.key, 'unreadable', '-', '-', ...(withRun ? ['-'] : []), '-', '-']
    const run = withRun ? [lock.run === undefined ? '-' : String(lock.run)] : []
    return [
      lock.key,
      stateOf(lock),
      lock.owner,
      String(lock.token),
      ...run,
      expiryOf(lock),
      lock.lastRun ?? '-',
    ]
  })
  const notes = locks.flatMap((lock) =>
    'error' in lock ? [printable(`${lock.key}: ${lock.error.name}: ${lock.error.message}`)] : [],
  )
  return [
    ...table([header, ...rows.map((row) => row.map(printable))]),
    ...(notes.length > 0 ? ['', ...notes] : []),
  ]
}

function stateOf(view: LockView): string {
  const state = `${view.held ? 'held' : 'free'}${view.paused ? ', paused' : ''}`
  return view.blocked ? `${state}, blocked (${view.blocked})` : state
}

function pausedText(paused: NonNullable<LockView['paused']>): string {
  return `since ${paused.at} by ${paused.by}${paused.note === undefined ? '' : `: ${paused.note}`}`
}

function expiryOf(view: LockView): string {
  if (view.released || view.expiresAt === null) return 'released'
  if (view.expiresInMs === undefined) return view.expiresAt
  return view.expiresInMs >= 0
    ? `in ${duration(view.expiresInMs)}`
    : `expired ${duration(-view.expiresInMs)} ago`
}

/** Rows padded into columns two spaces apart. */
export function table(rows: readonly (readonly string[])[]): string[] {
  const widths = rows.reduce<number[]>(
    (wide, row) => row.map((cell, i) => Math.max(wide[i] ?? 0, cell.length)),
    [],
  )
  return rows.map((row) =>
    row
      .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd(),
  )
}

/** A duration the way an operator reads it: `42s`, `4m 05s`, `2h 03m`, `3d 4h`. */
export function duration(ms: number): string {
  const seconds = Math.floor(Math.max(0, ms) / 1000)
  const two = (n: number) => String(n).padStart(2, '0')
  if (seconds < 60) return `${seconds}s`
  if (seconds < 3_600) return `${Math.floor(seconds / 60)}m ${two(seconds % 60)}s`
  if (seconds < 86_400) return `${Math.floor(seconds / 3_600)}h ${two(Math.floor(seconds / 60) % 60)}m`
  return `${Math.floor(seconds / 86_400)}d ${Math.floor(seconds / 3_600) % 24}h`
}

/** One run of a lock's `history` as the CLI shows it, in JSON as in tables. */
export interface RunView {
  readonly token: number
  readonly tick?: string
  readonly owner: string
  /** ISO 8601, by the store's clock. */
  readonly started: string
  readonly ended: string
  readonly durationMs: number
  readonly outcome: string
}

/** The runs a record keeps, oldest first as stored. */
export function runViewsOf(record: LockRecord): RunView[] {
  return (record.history ?? []).map((entry: HistoryEntry) => ({
    token: entry.token,
    ...(entry.tick !== undefined && { tick: entry.tick }),
    owner: entry.owner,
    started: isoFromSeconds(entry.started),
    ended: isoFromSeconds(entry.ended),
    durationMs: Math.max(0, Math.round((entry.ended - entry.started) * 1000)),
    outcome: entry.outcome,
  }))
}

/** The human form of a lock's history: a table, oldest run first, or a line saying there is none. */
export function historyTable(key: string, runs: readonly RunView[]): string[] {
  if (runs.length === 0) {
    return [`${key}: no runs recorded (runs are kept from releases with historySize above 0, the default 10)`]
  }
  const header = ['TOKEN', 'TICK', 'OWNER', 'STARTED', 'ENDED', 'DURATION', 'OUTCOME']
  const rows = runs.map((run) => [
    String(run.token),
    run.tick ?? '-',
    run.owner,
    run.started,
    run.ended,
    run.durationMs < 1_000 ? `${run.durationMs}ms` : duration(run.durationMs),
    run.outcome,
  ])
  return table([header, ...rows.map((row) => row.map(printable))])
}
