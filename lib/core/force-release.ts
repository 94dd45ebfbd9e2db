// The operator's end of a live lease: a higher token, the lease named in `ended_by`, written only
// over the version the operator judged.
import { changed, endedBy, judged, OPERATOR_BUDGET_MS, operatorWrite } from './operator-write.js'
import type { LockRecord } from './record.js'
import { WriteStatus } from './store.js'
import type { StoreSession } from './store-session.js'

/** How `forceRelease` frees a lock. */
export interface ForceReleaseOptions {
  /**
   * Release only this version of the record (`LockInfo.etag`, as `inspect` showed it): refuses
   * (`LockConflictError` `changed`, nothing written) when the lock changed since, so that a
   * decision made on what was shown never ends a newer run's lease. @default the version it reads
   */
  readonly etag?: string
}

/**
 * Frees the lock now with a higher token, so the stuck holder is fenced off, and names the
 * ended lease in `ended_by`. `null` when there is no object. Conditional on the version it read
 * (or `options.etag`): it never ends a lease it did not judge. Resolves the record written, also
 * when a run took the lock after it (its answer lost, a read settled it). Throws
 * `LockConflictError` for a token no acquisition could follow (`tokenAfter`).
 */
export async function forceRelease(
  session: StoreSession,
  operator: string,
  options: ForceReleaseOptions = {},
): Promise<LockRecord | null> {
  const deadline = session.clock.now() + OPERATOR_BUDGET_MS
  const snapshot = await judged(session, options.etag, deadline)
  if (!snapshot) return null
  const record: LockRecord = {
    ...snapshot.record,
    token: session.nextToken(snapshot.record.token),
    expires_at: 0,
    owner: `force-released by ${operator}`,
    ended_by: endedBy(session, snapshot.record, operator, 'force-release'),
  }
  const landing = await operatorWrite(session, { record, etag: snapshot.etag, what: 'released', deadline })
  if (!landing.landed) throw changed(session.key, 'released', WriteStatus.Conflict)
  return record
}
