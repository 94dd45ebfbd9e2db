// How an operator pauses and resumes a job: the schedule's fields written beside a live lease
// (pause --now also ends it, as forceRelease does), through the core's operator write.
import {
  changed,
  endedBy,
  holdsLease,
  judged,
  leaseIn,
  OPERATOR_BUDGET_MS,
  operatorWrite,
  sameJson,
  withinBudget,
} from '../core/operator-write.js'
import { type LockRecord, OPERATOR_FIELDS, type PauseRecord } from '../core/record.js'
import { WriteStatus } from '../core/store.js'
import type { Snapshot, StoreSession } from '../core/store-session.js'
import { type ScheduleFields, withSchedule } from './fields.js'

/** Every schedule control field removed: what `resume` writes (no pause, no count of failed runs). */
const CLEARED_SCHEDULE: ScheduleFields = Object.fromEntries(OPERATOR_FIELDS.map((field) => [field, null]))

/** How `LockOperator.pause` pauses a job. */
export interface PauseOptions {
  /** Why, for whoever looks (`inspect`, the skipped runs' log lines and results). */
  readonly note?: string
  /**
   * Also end the lease of a run that holds the lock now, as `forceRelease` does: the token goes
   * up, so its renewal, release and fenced writes are refused. Without it, a held lock stays
   * held and the pause takes effect from the next run. @default false
   */
  readonly now?: boolean
  /**
   * Pause only this version of the record (`LockInfo.etag`): refuses (`changed`, nothing written)
   * when the lock changed since. @default the version it reads
   */
  readonly etag?: string
}

/** What `pause` wrote, and whether it ended a live lease to do so. */
export interface PauseResult {
  /** The record written. */
  readonly record: LockRecord
  /** The record as it was before. */
  readonly previous: LockRecord
  /** The lock was held when read: by `previous.owner`, who goes on unless `endedLease`. */
  readonly wasHeld: boolean
  /** The live lease was ended (`now`). */
  readonly endedLease: boolean
  /**
   * The record as a read found it when the write's answer was lost and someone wrote after it
   * (the holder, or a run that took the lock): the pause landed, and this is what is there now.
   */
  readonly after?: LockRecord
}

/** What `resume` found and wrote. */
export interface ResumeResult {
  /** The record as it is now (as it was, when it was not paused). */
  readonly record: LockRecord
  /** The pause it lifted; `undefined` when the job was not paused and nothing was written. */
  readonly lifted: PauseRecord | undefined
}

/**
 * Pauses the job: every run skips until `resume`. The record stays as it is but for `paused`
 * (and its version, 2), so the holder of a live lease keeps it (its writes carry the pause over)
 * unless `now`. `null` when there is no object. Conditional on what was read: refuses
 * (`LockConflictError`, nothing written) when the lock changed meanwhile, but for a 409 answered
 * to a pause that ends no lease, which goes over what is there then.
 */
export async function pause(
  session: StoreSession,
  operator: string,
  options: PauseOptions = {},
): Promise<PauseResult | null> {
  const deadline = session.clock.now() + OPERATOR_BUDGET_MS
  let snapshot = await judged(session, options.etag, deadline)
  // The lease it read, whose renewals in between it rides out; an etag names one version only.
  const lease = options.etag === undefined && snapshot ? leaseIn(snapshot.record) : undefined
  for (;;) {
    if (!snapshot) return null
    const planned = pausing(session, snapshot, operator, options)
    const landing = await operatorWrite(session, {
      record: planned.record,
      etag: snapshot.etag,
      what: 'paused',
      deadline,
      isOurs: (current) =>
        sameJson(current.paused, planned.record.paused) &&
        (!planned.endedLease || sameJson(current.ended_by, planned.record.ended_by)),
      ...(lease && { rideOut: lease }),
    })
    if (landing.landed)
      return { ...planned, previous: snapshot.record, ...(landing.after && { after: landing.after }) }
    if (!holdsLease(landing.current?.record, lease)) {
      if (landing.refusal) throw landing.refusal
      // A pause that may end a lease was judged on what it read: it ends none it did not see.
      if (options.now === true || options.etag !== undefined)
        throw changed(session.key, 'paused', WriteStatus.Conflict)
    }
    snapshot = withinBudget(session, landing.current, deadline, 'paused')
  }
}

/** The record a pause writes over `snapshot`, and what it does to the lease there. */
function pausing(session: StoreSession, snapshot: Snapshot, operator: string, options: PauseOptions) {
  const previous = snapshot.record
  const paused: PauseRecord = {
    by: operator,
    at: Math.round(session.time.serverTime().mid) / 1000,
    ...(options.note !== undefined && { note: options.note }),
  }
  const wasHeld = !session.time.isFree(snapshot)
  const endedLease = options.now === true && wasHeld
  const ended: Partial<LockRecord> = endedLease
    ? {
        token: session.nextToken(previous.token),
        expires_at: 0,
        owner: `paused by ${operator}`,
        ended_by: endedBy(session, previous, operator, 'pause'),
      }
    : {}
  return { record: { ...withSchedule(previous, { paused }), ...ended }, wasHeld, endedLease }
}

/**
 * Resumes a paused job: removes `paused`, and the count of failed runs with it, so the next
 * run starts afresh (the record goes back to version 1). Writes nothing when it is not paused.
 * `null` when there is no object.
 */
export async function resume(session: StoreSession): Promise<ResumeResult | null> {
  const deadline = session.clock.now() + OPERATOR_BUDGET_MS
  let { snapshot } = await session.read(deadline)
  const lease = snapshot && leaseIn(snapshot.record)
  for (;;) {
    if (!snapshot) return null
    const lifted = snapshot.record.paused
    if (lifted === undefined) return { record: snapshot.record, lifted }
    const record = withSchedule(snapshot.record, CLEARED_SCHEDULE)
    const landing = await operatorWrite(session, {
      record,
      etag: snapshot.etag,
      what: 'resumed',
      deadline,
      isOurs: (current) => current.paused === undefined,
      ...(lease && { rideOut: lease }),
    })
    if (landing.landed) return { record: landing.after ?? record, lifted }
    // Lifting a pause ends no lease: it goes over what is there now, after a 409; after a 412,
    // only over a renewal of the lease it read.
    if (landing.refusal && !holdsLease(landing.current?.record, lease)) throw landing.refusal
    snapshot = withinBudget(session, landing.current, deadline, 'resumed')
  }
}
