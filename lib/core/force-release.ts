// The operator's end of a live lease: a higher token, the lease named in `ended_by`, written only
// over the version the operator judged, or over a later one of the same lease.
import { ConflictReason } from './errors.js'
import {
  changed,
  endedBy,
  holdsLease,
  type JudgedLease,
  judged,
  OPERATOR_BUDGET_MS,
  operatorWrite,
  refused,
  withinBudget,
} from './operator-write.js'
import type { LockRecord } from './record.js'
import { WriteStatus } from './store.js'
import type { StoreSession } from './store-session.js'

export type { JudgedLease } from './operator-write.js'

/** How `forceRelease` frees a lock: over one version of the record, or while one lease holds it. */
export type ForceReleaseOptions =
  | {
      /**
       * Release only this version of the record (`LockInfo.etag`, as `inspect` showed it):
       * refuses (`LockConflictError` `changed`, nothing written) when the lock changed since, so
       * that a decision made on what was shown never ends a newer run's lease. A renewal changes
       * it too: `lease` rides those out. @default the version it reads
       */
      readonly etag?: string
      readonly lease?: never
    }
  | {
      /**
       * End only this lease (the `LockInfo` of a held lock, as `inspect` showed it): goes over
       * whatever version holds it now, as a stuck run that keeps renewing writes them, and
       * refuses (`LockConflictError` `changed`, nothing written) once another lease took the lock
       * or this one was released.
       */
      readonly lease: JudgedLease
      readonly etag?: never
    }

/**
 * Frees the lock now with a higher token, so the stuck holder is fenced off, and names the
 * ended lease in `ended_by`. `null` when there is no object. Conditional on the version it read
 * (`options.etag`, or one of `options.lease`'s): it never ends a lease it did not judge. Resolves
 * the record written, also when a run took the lock after it (its answer lost, a read settled
 * it). Throws `LockConflictError` for a token no acquisition could follow (`tokenAfter`).
 */
export async function forceRelease(
  session: StoreSession,
  operator: string,
  options: ForceReleaseOptions = {},
): Promise<LockRecord | null> {
  const deadline = session.clock.now() + OPERATOR_BUDGET_MS
  const { lease } = options
  let snapshot = await judged(session, options.etag, deadline)
  for (;;) {
    if (!snapshot) return null
    if (lease) ofLease(session.key, snapshot.record, lease)
    const record: LockRecord = {
      ...snapshot.record,
      token: session.nextToken(snapshot.record.token),
      expires_at: 0,
      owner: `force-released by ${operator}`,
      ended_by: endedBy(session, snapshot.record, operator, 'force-release'),
    }
    const landing = await operatorWrite(session, {
      record,
      etag: snapshot.etag,
      what: 'released',
      deadline,
      ...(lease && { rideOut: lease }),
    })
    if (landing.landed) return record
    if (!lease) throw changed(session.key, 'released', WriteStatus.Conflict)
    snapshot = withinBudget(session, landing.current, deadline, 'released')
  }
}

/** Refuses, writing nothing, unless `record` still holds `lease`, not released. */
function ofLease(key: string, record: LockRecord, lease: JudgedLease): void {
  const judgedOne = `the lease it judged (token ${lease.token} of ${lease.owner})`
  if (holdsLease(record, lease)) return
  if (record.token !== lease.token || record.owner !== lease.owner) {
    throw refused(
      key,
      `${judgedOne} is over: ${record.owner} holds token ${record.token} now`,
      ConflictReason.Changed,
    )
  }
  throw refused(key, `${judgedOne} was released since`, ConflictReason.Changed)
}
