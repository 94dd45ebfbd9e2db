/**
 * History: the last runs a lock's record keeps, each as the write that ended it handed it to the
 * lock's run recorder (`LockOptions.recordRun`). The core says when a run ends and how; keeping
 * them, how many and within what room, is the job's policy, and lives here.
 */
import { LockOptionsError } from '../core/errors.js'
import type { RunRecorder } from '../core/lock-options.js'
import { type HistoryEntry, type LockRecord, MAX_RECORD_BYTES, withinRecordSize } from '../core/record.js'

/** How many runs `history` keeps by default, in the run lifecycle. */
export const DEFAULT_HISTORY_SIZE = 10

/** The most runs a record's `history` may keep (each is a few hundred bytes of a 64 KiB record). */
export const MAX_HISTORY_SIZE = 100

/**
 * Room a history trim leaves under `MAX_RECORD_BYTES` for what the next ordinary write adds: an
 * acquisition's `running` and counters, an owner a few hundred bytes longer than the last, and
 * the entry of a run it finds abandoned. The largest checkpoint still leaves room for ten ordinary
 * runs beside it. A write that adds more (owners near their 1024-character limit, long ticks) is
 * fitted by the write itself (`withinRecordSize`), never refused because of history.
 */
export const HISTORY_HEADROOM_BYTES = 1024

/**
 * The recorder that keeps the last `size` runs in the record's `history`, oldest first: a
 * release given an outcome adds its run, an acquisition over a lease never released adds that
 * one (`abandoned`, or `replaced`), each within the write made anyway. 0 keeps none (an existing
 * history is left as it is). Throws `LockOptionsError` for a size that is not a whole number of
 * runs from 0 to `MAX_HISTORY_SIZE`.
 */
export function keepHistory(size: number): RunRecorder {
  validateHistorySize(size, 'the history size', (message) => {
    throw new LockOptionsError(message)
  })
  return (record, run) => withHistory(record, run, size)
}

/**
 * `record` with `entry` appended to its history, keeping the last `keep` entries, and fewer if
 * need be so that the record stays `HISTORY_HEADROOM_BYTES` within `MAX_RECORD_BYTES`: the oldest
 * go first, down to none. `keep` 0 leaves it as it is.
 */
export function withHistory(record: LockRecord, entry: HistoryEntry, keep: number): LockRecord {
  if (keep <= 0) return record
  const history = [...(record.history ?? []), entry].slice(-keep)
  return withinRecordSize({ ...record, history }, MAX_RECORD_BYTES - HISTORY_HEADROOM_BYTES)
}

/** Refuses a `historySize` that is not a whole number of runs, 0 or more. */
export function validateHistorySize(value: unknown, what: string, fail: (message: string) => never): void {
  if (value === undefined) return
  if (!(Number.isSafeInteger(value) && (value as number) >= 0 && (value as number) <= MAX_HISTORY_SIZE)) {
    fail(
      `${what} must be a whole number of runs from 0 to ${MAX_HISTORY_SIZE}, got ${JSON.stringify(value) ?? String(value)}`,
    )
  }
}
