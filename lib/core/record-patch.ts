import { LockOptionsError } from './errors.js'
import { NOT_JOB_FIELDS } from './holder-record.js'
import { wrongField } from './parse-record.js'
import {
  type JsonValue,
  type LockRecord,
  MAX_RECORD_DEPTH,
  MAX_STATE_BYTES,
  nestingDepth,
  type RunOutcome,
  withFields,
  withinRecordSize,
} from './record.js'
import type { StoreLimits } from './store.js'

/**
 * Fields a holder may set on the record when it writes. The record carries two kinds of memory:
 * `state`, the checkpoint of work not finished yet (a run that completes clears it, so the next
 * run starts afresh), and `cursor`, where the work stands across runs (kept until replaced).
 */
export interface RecordPatch {
  /** A checkpoint for the next holder (`LockRecord.state`). `undefined` leaves it as it is. */
  readonly state?: JsonValue
  /** Removes the checkpoint (`state`): the work it tracked is complete. Ignored with `state`. */
  readonly clearState?: boolean
  /** Where the work stands across runs (`LockRecord.cursor`). `undefined` leaves it as it is. */
  readonly cursor?: JsonValue
  /**
   * The job's own fields, set, or (`null`) removed; `undefined` leaves one as it is: what the
   * record keeps for the job besides its lease, such as the schedule's `last_run`, `paused` and
   * failure counts. Refused (`LockOptionsError`, nothing written): the lease's fields, `state`,
   * `cursor`, `history` and `ended_by` (each has a writer of its own), and a value no reader
   * would take (a `paused` that is no `PauseRecord`, a count that is no count).
   */
  readonly fields?: RecordFields
  /**
   * How the run ended, for the record's `history` (only `release` records it, and only when the
   * lock keeps its runs: `LockOptions.recordRun`). With `tick`, the tick it ran for.
   */
  readonly outcome?: typeof RunOutcome.Completed | typeof RunOutcome.Failed
  /** The tick the run was for, kept in its `history` entry (`outcome`). */
  readonly tick?: string
}

/** A record's fields by name, as `RecordPatch.fields` sets them: JSON values, or `null` to remove one. */
export type RecordFields = { readonly [field: string]: unknown }

/** Whose record a patch is for, and what its store can hold: what the refusals name and check. */
export interface PatchTarget {
  readonly key: string
  readonly limits: StoreLimits | undefined
}

/**
 * `record` (the holder's, its lease fields already set) with what `patch` writes besides the
 * lease, or `LockOptionsError` when the patch writes what is not the holder's to write or what
 * no reader could take back; then nothing may be written. The oldest history makes room for a
 * checkpoint or a cursor, never the other way round.
 */
export function patchedRecord(record: LockRecord, patch: RecordPatch, target: PatchTarget): LockRecord {
  const next: Record<string, unknown> = patch.fields
    ? withJobFields(record, patch.fields, target)
    : { ...record }
  if (patch.state !== undefined) next.state = checked('state', patch.state, 'Checkpoint state', target)
  else if (patch.clearState) delete next.state
  if (patch.cursor !== undefined) next.cursor = checked('cursor', patch.cursor, 'Cursor', target)
  return withinRecordSize(next as LockRecord)
}

/**
 * `record` with the job's `fields` set (or, `null`, removed), refusing what is not the job's to
 * write. Only the fields set are checked: the rest were read as valid, or are the lock's own.
 */
function withJobFields(record: LockRecord, fields: RecordFields, target: PatchTarget): LockRecord {
  const set: Record<string, unknown> = {}
  const removed: Record<string, null> = {}
  for (const [field, value] of Object.entries(fields)) {
    if (value === undefined) continue
    if (NOT_JOB_FIELDS.has(field)) {
      throw new LockOptionsError(
        `"${field}" is not the job's to set through fields: the lease's own, the checkpoint, the ` +
          `cursor, the history and ended_by each have their own writer; nothing was written`,
        { key: target.key },
      )
    }
    if (value === null) removed[field] = null
    else set[field] = checked(field, value as JsonValue, `The field "${field}"`, target)
  }
  const wrong = wrongField(set)
  if (wrong !== undefined) {
    throw new LockOptionsError(
      `The field "${wrong}" would be of a wrong type, which every reader refuses; nothing was written`,
      { key: target.key },
    )
  }
  return withFields(record, { ...removed, ...set })
}

/**
 * A copy of `value` as it is stored as the record's `field`: refused (`LockOptionsError`) when no
 * reader could take it back, when the store cannot hold it (`LockStore.limits`), or when it is
 * larger than `MAX_STATE_BYTES`.
 */
function checked(field: string, value: JsonValue, what: string, { key, limits }: PatchTarget): JsonValue {
  // The value sits one level below the record.
  const limit = Math.min(MAX_RECORD_DEPTH, limits?.recordDepth ?? MAX_RECORD_DEPTH) - 1
  const refused = (why: string, cause?: unknown) =>
    new LockOptionsError(`${what} ${why}; nothing was written`, { key, cause })
  if (nestingDepth(value, limit) > limit) {
    throw refused(`nests more than ${limit} levels deep (or contains itself)`)
  }
  let text: string | undefined
  try {
    text = JSON.stringify(value)
  } catch (error) {
    throw refused('cannot be written as JSON', error)
  }
  if (text === undefined) throw refused('is not a JSON value')
  const size = Buffer.byteLength(text, 'utf8')
  if (size > MAX_STATE_BYTES) {
    throw new LockOptionsError(`${what} is ${size} bytes; the limit is ${MAX_STATE_BYTES}`, { key })
  }
  // A copy, as written: the job may go on changing its own object while the write is retried,
  // and later writes of the lease carry the value over from its record.
  const stored = JSON.parse(text) as JsonValue
  const unstorable = limits?.unstorable?.(field, stored)
  if (unstorable !== undefined) throw refused(`cannot be stored as it is: ${unstorable}`)
  return stored
}
