import { LockOptionsError } from './errors.js'
import type { RunRecorder } from './lock-options.js'
import {
  type LockRecord,
  nextRun,
  RECORD_VERSION,
  RUN_LOG_FIELD,
  RunOutcome,
  withinRecordSize,
} from './record.js'
import type { LeaseTerm } from './timing.js'

/**
 * The run fields of the record as its holders write them: an acquisition names the run (its
 * token, lease and tick), records the run it took over, and a release ends it.
 */

/** What an acquisition writes besides its lease: the tick it runs for, and whether it replaces a live run. */
export interface AcquisitionFields {
  /** The tick the new holder runs for (`running`). */
  readonly tick?: string | undefined
  /** How often the new holder reads the record to learn it was replaced (`running.watch_ms`). */
  readonly watchMs?: number | undefined
  /** `previous` is held by a live run that this acquisition replaces (`onHeld: 'replace'`). */
  readonly replacing?: boolean
  /** What the record keeps of the run this acquisition ends, if any (`LockOptions.recordRun`). */
  readonly recordRun?: RunRecorder | undefined
}

/**
 * The record an acquisition by `owner` writes over `previous` (or where there is none): what was
 * there, with `token`, the lease of `term` and the tick it runs for; a lease never released (its
 * holder crashed, ran out of time, or is replaced now) goes into the history now, by its taker,
 * at no extra request. History makes room, oldest first, for whatever else the write must carry:
 * an acquisition is never refused because of it, and the checkpoint and cursor stay.
 */
export function acquisitionRecord(
  previous: LockRecord | undefined,
  owner: string,
  token: number,
  term: LeaseTerm,
  fields: AcquisitionFields = {},
): LockRecord {
  const { running: _stale, ...kept } = previous ?? ({} as Partial<LockRecord>)
  const acquiredAt = Math.round(term.serverNow) / 1000
  const record: LockRecord = {
    ...kept,
    v: RECORD_VERSION,
    token,
    run: nextRun(previous),
    expires_at: term.expires_at,
    owner,
    acquired_at: acquiredAt,
    ttl_ms: term.ttlMs,
    ...runningFields(token, fields),
  }
  if (!previous || previous.expires_at === 0) return withinRecordSize(record)
  const tick = runningTick(previous)
  const ended = {
    token: previous.token,
    ...(tick !== undefined && { tick }),
    owner: previous.owner,
  }
  const replaced = fields.replacing ? { ...record, replaced: { ...ended, at: acquiredAt } } : record
  const recorded = withRunRecorded(replaced, fields.recordRun, {
    ...ended,
    started: previous.acquired_at ?? previous.expires_at,
    ended: fields.replacing ? acquiredAt : previous.expires_at,
    outcome: fields.replacing ? RunOutcome.Replaced : RunOutcome.Abandoned,
  })
  return withinRecordSize(recorded)
}

/** The `running` field of a lease with `token` for the tick it runs for, if it names one. */
export function runningFields(token: number, fields: AcquisitionFields): Pick<LockRecord, 'running'> {
  if (fields.tick === undefined) return {}
  const watch = fields.watchMs !== undefined ? { watch_ms: fields.watchMs } : {}
  return { running: { token, tick: fields.tick, ...watch } }
}

/** The fields of a record that make its lease: the lock's own, which no run recorder changes. */
const LEASE_FIELDS = [
  'v',
  'token',
  'run',
  'expires_at',
  'owner',
  'acquired_at',
  'ttl_ms',
  'running',
  'replaced',
] as const

/**
 * What a holder's write may not set through `RecordPatch.fields`: the lease's fields, and those
 * with a writer of their own (the checkpoint and cursor, the run recorder's history, the
 * operator's `ended_by`).
 */
export const NOT_JOB_FIELDS: ReadonlySet<string> = new Set([
  ...LEASE_FIELDS,
  'state',
  'cursor',
  RUN_LOG_FIELD,
  'ended_by',
])

/**
 * `record` with the run it ends kept as `recordRun` says (nothing without one), and its lease as
 * it was: the lease's fields are written after the recorder's answer, so a job's recorder can
 * add to the record but never change whose lease it is, its token or its term.
 */
export function withRunRecorded(
  record: LockRecord,
  recordRun: RunRecorder | undefined,
  run: Parameters<RunRecorder>[1],
): LockRecord {
  if (!recordRun) return record
  const answer: unknown = recordRun(record, run)
  // A recorder that hands back no record would drop the checkpoint and the cursor with it.
  if (typeof answer !== 'object' || answer === null || Array.isArray(answer)) {
    throw new LockOptionsError(
      `recordRun must return the record it was given, with what it keeps added; got ${
        Array.isArray(answer) ? 'an array' : String(answer)
      }. Nothing was written`,
    )
  }
  const recorded: Record<string, unknown> = { ...answer }
  for (const field of LEASE_FIELDS) {
    if (record[field] === undefined) delete recorded[field]
    else recorded[field] = record[field]
  }
  return recorded as unknown as LockRecord
}

/**
 * The tick the holder of `record` runs for, when its own acquisition wrote it: `running` is
 * trusted only with the record's token (a writer that does not know it keeps a stale one).
 */
export function runningTick(record: LockRecord): string | undefined {
  return record.running?.token === record.token ? record.running.tick : undefined
}

/**
 * How often the holder of `record` reads it to learn it was replaced, when its own acquisition
 * said so: a holder that does not watch must not be replaced (it would never hear of it).
 */
export function runningWatchMs(record: LockRecord): number | undefined {
  return record.running?.token === record.token ? record.running.watch_ms : undefined
}

/** `record` as a holder leaves it when its run is over: no run is going on any more. */
export function withoutRunning(record: LockRecord): LockRecord {
  const { running: _running, ...rest } = record
  return rest as LockRecord
}
