import { type LockRecord, OPERATOR_FIELDS, type OperatorField, withFields } from '../core/record.js'

/**
 * The schedule's control fields a write may set, or remove (`null`); `undefined` leaves one as it
 * is: a pause and the count of failed runs. Operators may change them under a live lease without
 * taking it over (the core's `rebaseOnOperatorWrite`), and a run's release writes them through the
 * lease's `fields`.
 */
export type ScheduleFields = {
  readonly [F in OperatorField]?: Exclude<LockRecord[F], undefined> | null
}

/** Sets, or (`null`) removes, the schedule control fields of `record`; other fields given are ignored. */
export function withSchedule(record: LockRecord, fields: ScheduleFields): LockRecord {
  return withFields(record, Object.fromEntries(OPERATOR_FIELDS.map((field) => [field, fields[field]])))
}
