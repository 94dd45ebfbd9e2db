// The operator's end of a live lease: a higher token, the lease named in `ended_by`, written only
// over the version the operator judged, or over a later one of the same lease.
import { ConflictReason, LockConflictError, LockStoreError } from './errors.js'
import { changed, endedBy, judged, OPERATOR_BUDGET_MS, operatorWrite, refused } from './operator-write.js'
import type { LockRecord } from './record.js'
import { WriteStatus } from './store.js'
import type { Snapshot, StoreSession } from './store-session.js'

/** A lease, as `inspect` showed it (`LockInfo` is one). */
export interface JudgedLease {
  /** The lease's fencing token: each acquisition's own, kept by its renewals. */
  readonly token: number
  /** Its holder, as the record names it. */
  readonly owner: string
}

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
    const over = snapshot
    const record: LockRecord = {
      ...over.record,
      token: session.nextToken(over.record.token),
      expires_at: 0,
      owner: `force-released by ${operator}`,
      ended_by: endedBy(session, over.record, operator, 'force-release'),
    }
    const landing = await operatorWrite(session, {
      record,
      etag: over.etag,
      what: 'released',
      deadline,
    }).catch((error: unknown) =>
      lease ? changedSince(session, error, over, deadline) : Promise.reject(error),
    )
    if (landing.landed) return record
    if (!lease) throw changed(session.key, 'released', WriteStatus.Conflict)
    snapshot = current(session, landing.current, deadline)
  }
}

/**
 * What is there after a write refused as the lock changed (a 412; `operatorWrite` refuses for
 * nothing else): read, for `ofLease` to judge. Nothing of this call landed while that read shows
 * the judged lease: a landing raised the token. The same version as the one written over means
 * the store refused a condition that held (an engine that takes no quoted etag): that refusal
 * stands, rather than a write again and again.
 */
async function changedSince(session: StoreSession, error: unknown, over: Snapshot, deadline: number) {
  if (!(error instanceof LockConflictError)) throw error
  const { snapshot } = await session.read(deadline)
  if (snapshot?.etag === over.etag) throw error
  return { landed: false, current: snapshot } as const
}

/** Refuses, writing nothing, unless `record` still holds `lease`, not released. */
function ofLease(key: string, record: LockRecord, lease: JudgedLease): void {
  const judgedOne = `the lease it judged (token ${lease.token} of ${lease.owner})`
  if (record.token !== lease.token || record.owner !== lease.owner) {
    throw refused(
      key,
      `${judgedOne} is over: ${record.owner} holds token ${record.token} now`,
      ConflictReason.Changed,
    )
  }
  if (record.expires_at === 0) throw refused(key, `${judgedOne} was released since`, ConflictReason.Changed)
}

/** The version a write met instead of its own, to judge again while the budget lasts. */
function current(
  session: StoreSession,
  snapshot: Snapshot | undefined,
  deadline: number,
): Snapshot | undefined {
  if (session.clock.now() < deadline) return snapshot
  throw new LockStoreError(
    `Lock "${session.key}": the lock kept changing while being released; nothing was written`,
    { key: session.key, retryable: true },
  )
}
