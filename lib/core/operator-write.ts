// What every operator's write shares: the version it judged, who ended which lease, a write that
// settles a lost answer and waits out another's write in flight, and the errors that say nothing
// was written. forceRelease (force-release.ts), reset (reset.ts), and the schedule's pause and
// resume (lib/schedule/pause-writes.ts) are made of it.
import { ConflictReason, LockConflictError, LockStoreError } from './errors.js'
import { canonicalJson, type EndedByOperatorRecord, type LockRecord, serializeRecord } from './record.js'
import { WriteStatus } from './store.js'
import type { Snapshot, StoreSession } from './store-session.js'

/** Budget for store retries of an operator's call (`inspect` included). */
export const OPERATOR_BUDGET_MS = 10_000

/** The record read, or `undefined` for none; refuses when it is not the version `etag` judged. */
export async function judged(
  session: StoreSession,
  etag: string | undefined,
  deadline: number,
): Promise<Snapshot | undefined> {
  const { snapshot } = await session.read(deadline)
  if (etag !== undefined && snapshot !== undefined && snapshot.etag !== etag) {
    throw refused(
      session.key,
      `the lock changed since it was judged (${snapshot.record.owner} wrote token ${snapshot.record.token} since)`,
      ConflictReason.Changed,
    )
  }
  return snapshot
}

/** A lease, as an operator judged it (`LockInfo` is one). */
export interface JudgedLease {
  /** The lease's fencing token: each acquisition's own, kept by its renewals. */
  readonly token: number
  /** Its holder, as the record names it. */
  readonly owner: string
}

/** The live lease `record` holds, whose renewals an operator's write rides out; none once released. */
export function leaseIn(record: LockRecord): JudgedLease | undefined {
  return record.expires_at === 0 ? undefined : { token: record.token, owner: record.owner }
}

/** Whether `record` still holds `lease`, not released: only its renewals (and operators) wrote since. */
export function holdsLease(record: LockRecord | undefined, lease: JudgedLease | undefined): boolean {
  return (
    record !== undefined &&
    lease !== undefined &&
    record.token === lease.token &&
    record.owner === lease.owner &&
    record.expires_at !== 0
  )
}

/** `snapshot`, to write over again while the budget lasts; once it is spent, nothing was written. */
export function withinBudget<T>(session: StoreSession, snapshot: T, deadline: number, what: string): T {
  if (session.clock.now() < deadline) return snapshot
  throw new LockStoreError(
    `Lock "${session.key}": the lock kept changing while being ${what}; nothing was written`,
    {
      key: session.key,
      retryable: true,
    },
  )
}

/** Who ends the lease of `previous`, and when, for `LockRecord.ended_by`. */
export function endedBy(
  session: StoreSession,
  previous: LockRecord,
  operator: string,
  action: string,
): EndedByOperatorRecord {
  const at = Math.round(session.time.serverTime().mid) / 1000
  return { token: previous.token, owner: previous.owner, by: operator, action, at }
}

/** An operator's write: the record, the version it goes over, and how to tell it in a later record. */
interface OperatorWrite {
  readonly record: LockRecord
  readonly etag: string
  /** For messages: `released`, `paused`, `resumed`. */
  readonly what: string
  readonly deadline: number
  /** Whether `current`, written after a lost answer, shows this write landed under it. */
  readonly isOurs?: (current: LockRecord) => boolean
  /**
   * The lease the caller read, whose renewals it rides out: a refusal (412) is then read again
   * and answered as `landed` false with its `refusal`, for the caller to judge what is there.
   */
  readonly rideOut?: JudgedLease
}

/**
 * Written (`after`: what a settle read found written over it since), or not: after a 409 and a
 * change, or after a refusal (`refusal`, with `rideOut`) that a read found a change behind.
 */
type Landing =
  | { readonly landed: true; readonly after?: LockRecord }
  | { readonly landed: false; readonly current: Snapshot | undefined; readonly refusal?: LockConflictError }

/**
 * Replaces the record read with etag `etag`, and says whether it landed. A lost answer is settled
 * by a read (`StoreSession.write`): written, even when someone wrote after it. A 409 is someone
 * else's write in flight: tried again while the record is unchanged; once it changed, `landed`
 * false, for the caller to judge again. Refuses (`LockConflictError`) when someone else wrote first.
 */
export async function operatorWrite(session: StoreSession, write: OperatorWrite): Promise<Landing> {
  const { record, etag, what, deadline } = write
  const isOurs = write.isOurs ?? ((current: LockRecord) => sameJson(current.ended_by, record.ended_by))
  for (let conflicts = 0; ; conflicts++) {
    const result = await session.write(serializeRecord(record), etag, deadline).catch((error: unknown) => {
      throw mayHaveLanded(session.key, what, error)
    })
    if (result.status === WriteStatus.Written) {
      session.remember(record, result.etag)
      return { landed: true }
    }
    if (result.status !== WriteStatus.Conflict) {
      // A settle read after a lost answer found another write: ours may be under it.
      if (result.current && isOurs(result.current.record))
        return { landed: true, after: result.current.record }
      const refusal = changed(session.key, what, result.status)
      if (!write.rideOut) throw refusal
      return afterRefusal(session, refusal, etag, deadline)
    }
    const { snapshot } = await session.read(deadline)
    if (snapshot?.etag !== etag) {
      // A 409 after a try whose answer was lost: that try may be what changed the record.
      if (snapshot && isOurs(snapshot.record)) {
        return sameJson(snapshot.record, record) ? { landed: true } : { landed: true, after: snapshot.record }
      }
      return { landed: false, current: snapshot }
    }
    await session.waitBeforeRetry(conflicts, undefined, deadline)
    if (session.clock.now() >= deadline) {
      throw new LockStoreError(
        `Lock "${session.key}": ${conflicts + 1} write conflicts in a row while being ${what}; nothing was written`,
        { key: session.key, retryable: true },
      )
    }
  }
}

/**
 * After a write refused as the lock changed (a 412): the version there now, read again, for the
 * caller to judge. Nothing of the call landed while that version holds the lease it judged: a
 * landing ends it. The same version as the one written over (`etag`) means the store refused a
 * condition that held (an engine that takes no quoted etag): that refusal stands, rather than a
 * write again and again.
 */
async function afterRefusal(
  session: StoreSession,
  refusal: LockConflictError,
  etag: string,
  deadline: number,
): Promise<Landing> {
  const { snapshot } = await session.read(deadline)
  if (snapshot?.etag === etag) throw refusal
  return { landed: false, current: snapshot, refusal }
}

/** A store failure after the write was sent: it may have landed, and only a read can tell. */
function mayHaveLanded(key: string, what: string, error: unknown): unknown {
  if (!(error instanceof LockStoreError) || !error.retryable) return error
  return new LockStoreError(
    `Lock "${key}": the store kept failing while the lock was being ${what}, so the write may have been written: ` +
      'inspect the lock before trying again',
    { key, retryable: true, cause: error },
  )
}

export function changed(key: string, what: string, status: string): LockConflictError {
  return refused(key, `the lock changed while being ${what} (${status})`, ConflictReason.Changed)
}

/** Equal as stored: the same JSON, whatever order each one's maps were built in. */
export function sameJson(a: unknown, b: unknown): boolean {
  return canonicalJson(a) === canonicalJson(b)
}

export function refused(key: string, message: string, reason: ConflictReason): LockConflictError {
  return new LockConflictError(`Lock "${key}": ${message}; nothing was written`, { key, reason })
}
